import { readFileSync } from 'node:fs';
import { Command } from 'commander';
import { allCommands } from './command-tree.js';
import { COMMANDS } from './commands.js';
import { formatHelp } from './help-format.js';
import { CommandLineMisuse } from './misuse.js';

const ENVIRONMENT = `
conventions:
  every command and subcommand takes --help (-h); rastro --version (-V) prints the version
  exit codes: 0 done, 1 the work failed (the message says why), 2 the command line was wrong
  listing commands take --json: one JSON document on stdout instead of the table
  long work shows its progress on stderr: one updating line on a terminal, plain lines when piped
  --processors <path> loads processors from a module; by default from ./rastro.config.js or .ts

environment:
  DATABASE_URL      postgres:// URL; without it rastro uses embedded PGlite in RASTRO_DATA_DIR (./.rastro)
  RASTRO_SCHEMA     schema for rastro's tables (rastro)
  RASTRO_POOL_SIZE  PostgreSQL connections in this process's pool (10)
  PORT, HOST        where serve listens (3000, 127.0.0.1)
  RASTRO_LOG_LEVEL  fatal|error|warn|info|debug|trace|silent (info)
  RASTRO_API_KEY    bearer key for every route but /healthz, /readyz and the console's files; required for a non-loopback HOST
  RASTRO_ALLOWED_HOSTS            without a key, Host names served besides localhost, 127.0.0.1, [::1] (none)
  RASTRO_HEADERS_TIMEOUT_SECONDS, RASTRO_REQUEST_TIMEOUT_SECONDS, RASTRO_KEEP_ALIVE_TIMEOUT_SECONDS   slow clients get 408 (10, 30, 5)
  RASTRO_SNAPSHOT_EVERY           account snapshot interval in events, 0 = off (100)
  RASTRO_IDEMPOTENCY_TTL_SECONDS  how long idempotency keys are kept (86400)
  RASTRO_BROKER_URL nats://… or amqp://…, a cluster's nodes separated by commas; unset: the relay publishes in process
  RASTRO_RELAY      on|off: whether serve runs a relay (on)
  RASTRO_SUBJECT_PREFIX, RASTRO_NATS_STREAM, RASTRO_NATS_DUPLICATE_WINDOW_SECONDS, RASTRO_NATS_REPLICAS   (rastro, RASTRO, 120, 1)
  RASTRO_AMQP_EXCHANGE            the RabbitMQ topic exchange (rastro)
  RASTRO_AMQP_QUEUE_TYPE          classic | quorum: the inbox queue's type; quorum on a cluster, read one delivery at a time (classic)
  RASTRO_INBOX_ACK_WAIT_SECONDS, RASTRO_INBOX_MAX_ACK_PENDING   the inbox's ack wait (NATS) and unacknowledged deliveries (30, 256)
  RASTRO_OUTBOX_RETENTION_DAYS    published messages kept this many days (7)
  RASTRO_OUTBOX_RETENTION         delete | daily-partitions (delete)
  RASTRO_ORDER_ALERT_URL          where "cancelled after import" alerts are posted
  RASTRO_PROVIDER_URL             the payment provider's REST API, for poll and serve's poll loop
  RASTRO_PROVIDER_SOURCE          the provider's name in serve's poll loop (pied)
  RASTRO_POLL_INTERVAL_SECONDS    serve polls the provider this often, 0 = never (0)
  RASTRO_PROCESSORS               the processors module serve replays with (--processors; else ./rastro.config.js)
  RASTRO_ACQUIRER_URL             the card acquirer's REST API; without it charges can be read, not created
  RASTRO_ACQUIRER_TIMEOUT_MS      the acquirer call's timeout (10000)
  RASTRO_CHARGE_DEADLINE_SECONDS  a charge PENDING this long is asked about; must exceed the timeout (120)
  RASTRO_CHARGE_REVIEW_AFTER_SECONDS   unknown this long after the charge: review, or void (1800)
  RASTRO_CHARGE_NOT_FOUND         retry | fail: when the acquirer has no capture for the key (retry)
  RASTRO_CHARGE_ON_DEADLINE       review | void: the business deadline's rule (review)
  RASTRO_RECONCILE_INTERVAL_SECONDS    serve's reconciliation passes, 0 = none (10)
  RASTRO_AUDIT_INTERVAL_SECONDS   serve's incremental audits (rastro audit), 0 = none (0)
  RASTRO_SEALER     on|off: whether serve seals the trail (on)
  RASTRO_DIGEST_KEY_FILE, RASTRO_DIGEST_PUBLIC_KEY_FILE   the Ed25519 key that signs digests, the one verify trusts (unsigned; the signing key's)
  RASTRO_DIGEST_PUBLISH, RASTRO_DIGEST_INTERVAL_SECONDS   where serve publishes digests, folder:<path> or broker, and how often (nowhere, 3600)
  RASTRO_MASTER_KEY_FILE          the key that wraps data subjects' keys: personal fields open, rastro forget erases them`;

function packageVersion(): string {
  return (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;
}

/** Rejects options given to a command that only passes on to one of its subcommands (`rastro replay --simulate diff x`). */
function rejectOptionsBeforeSubcommand(parent: Command): void {
  parent.hook('preSubcommand', (command, sub) => {
    const given = command.options.find((option) => command.getOptionValueSource(option.attributeName()) === 'cli');
    if (given) command.error(`${given.long} is an option of ${command.name()}, not of ${command.name()} ${sub.name()}`, { code: 'rastro.misplacedOption', exitCode: 2 });
  });
}

/** Settings every command needs, however it was added: misuse is thrown (exit 2, printed by main), help in rastro's layout. */
function configure(command: Command, root: Command): void {
  command.exitOverride((error) => {
    throw new CommandLineMisuse(error, command);
  });
  command.configureOutput({ outputError: () => undefined, writeErr: () => undefined });
  command.configureHelp({ formatHelp });
  command.helpOption('-h, --help', 'show this usage');
  command.enablePositionalOptions();
  if (command !== root) command.helpCommand(false);
  if (command.commands.length > 0) rejectOptionsBeforeSubcommand(command);
}

/** The `rastro` command line: every command of {@link COMMANDS}, configured alike. */
export function buildProgram(): Command {
  const program = new Command('rastro')
    .description('an append-only event log on PostgreSQL with replayable processors and a local trail for every external effect')
    .version(packageVersion(), '-V, --version', 'print the version')
    .addHelpText('after', ENVIRONMENT);
  for (const register of COMMANDS) register(program);
  for (const command of [program, ...allCommands(program)]) configure(command, program);
  program.helpCommand('help [command]', 'show the usage of a command');
  return program;
}
