import { ConfigError } from 'rastro/internal/errors.js';
import { quoteSchema } from 'rastro/internal/db/schema-name.js';

/** Options for the rastro server and CLI. Each is resolved from options, then environment, then default. */
export interface RastroOptions {
  /**
   * A `postgres://` URL. Without one, rastro runs on embedded PGlite under `dataDir`.
   * @defaultValue `DATABASE_URL`
   */
  databaseUrl?: string;
  /** @defaultValue `RASTRO_DATA_DIR`, else `./.rastro` */
  dataDir?: string;
  /** @defaultValue `RASTRO_SCHEMA`, else `rastro` */
  schema?: string;
  /** Connections in the PostgreSQL pool of this process. @defaultValue `RASTRO_POOL_SIZE`, else 10 */
  poolSize?: number;
  /** @defaultValue `PORT`, else 3000 */
  port?: number;
  /** @defaultValue `HOST`, else 127.0.0.1 */
  host?: string;
  /** @defaultValue `RASTRO_LOG_LEVEL`, else `info` */
  logLevel?: string;
  /** Required for a non-loopback `host`. @defaultValue `RASTRO_API_KEY` */
  apiKey?: string;
  /**
   * Without an API key the server answers only to the loopback names; these host names too
   * (comma-separated in the environment). Ignored with a key. @defaultValue `RASTRO_ALLOWED_HOSTS`, else none
   */
  allowedHosts?: string[];
  /** Seconds a client has to send its request headers. @defaultValue `RASTRO_HEADERS_TIMEOUT_SECONDS`, else 10 */
  headersTimeoutSeconds?: number;
  /** Seconds a client has to send its whole request, body included. @defaultValue `RASTRO_REQUEST_TIMEOUT_SECONDS`, else 30 */
  requestTimeoutSeconds?: number;
  /** Seconds an idle keep-alive connection is kept open. @defaultValue `RASTRO_KEEP_ALIVE_TIMEOUT_SECONDS`, else 5 */
  keepAliveTimeoutSeconds?: number;
  /** Account snapshot interval in events; 0 turns snapshots off. @defaultValue `RASTRO_SNAPSHOT_EVERY`, else 100 */
  snapshotEvery?: number;
  /**
   * Accounts whose state the process remembers between requests, so a deposit is one statement;
   * 0 reads every account from its snapshot. @defaultValue `RASTRO_ACCOUNT_CACHE_SIZE`, else 10000
   */
  accountCacheSize?: number;
  /** How long idempotency keys are kept, in seconds. @defaultValue `RASTRO_IDEMPOTENCY_TTL_SECONDS`, else 86400 */
  idempotencyTtlSeconds?: number;
  /**
   * `nats://…` or `amqp://…`; a cluster's nodes separated by commas, all of one scheme. Without
   * one the relay publishes in process. @defaultValue `RASTRO_BROKER_URL`
   */
  brokerUrl?: string;
  /** Whether `serve` runs an outbox relay. @defaultValue `RASTRO_RELAY` (`on`/`off`), else on */
  relay?: boolean;
  /** Whether `serve` runs the order normalizer (off where it runs as its own role, `rastro normalize`). @defaultValue `RASTRO_NORMALIZER` (`on`/`off`), else on */
  normalizer?: boolean;
  /** NATS subjects are `<prefix>.<aggregateType>.<type>`; also the stream's subjects. @defaultValue `RASTRO_SUBJECT_PREFIX`, else `rastro` */
  subjectPrefix?: string;
  /** The JetStream stream, created when missing. @defaultValue `RASTRO_NATS_STREAM`, else `RASTRO` */
  natsStream?: string;
  /** Duplicate window of a stream rastro creates, in seconds. @defaultValue `RASTRO_NATS_DUPLICATE_WINDOW_SECONDS`, else 120 */
  natsDuplicateWindowSeconds?: number;
  /** Replicas of the stream rastro creates, 1 to 5: 3 on a three-node cluster. @defaultValue `RASTRO_NATS_REPLICAS`, else 1 */
  natsReplicas?: number;
  /** The RabbitMQ exchange (a durable topic exchange). @defaultValue `RASTRO_AMQP_EXCHANGE`, else `rastro` */
  amqpExchange?: string;
  /** The type of the queue the inbox declares on RabbitMQ: `quorum` (replicated) on a cluster, the production setting. @defaultValue `RASTRO_AMQP_QUEUE_TYPE`, else `classic` */
  amqpQueueType?: 'classic' | 'quorum';
  /** Seconds the inbox's JetStream durable waits for an acknowledgement before it redelivers. @defaultValue `RASTRO_INBOX_ACK_WAIT_SECONDS`, else 30 */
  inboxAckWaitSeconds?: number;
  /** Deliveries the inbox may hold unacknowledged: the durable's max_ack_pending on NATS, the prefetch on RabbitMQ. @defaultValue `RASTRO_INBOX_MAX_ACK_PENDING`, else 256 */
  inboxMaxAckPending?: number;
  /** Published outbox messages are deleted after this many days. @defaultValue `RASTRO_OUTBOX_RETENTION_DAYS`, else 7 */
  outboxRetentionDays?: number;
  /** `delete` (bounded batches) or `daily-partitions` (whole days dropped). @defaultValue `RASTRO_OUTBOX_RETENTION`, else `delete` */
  outboxRetention?: 'delete' | 'daily-partitions';
  /** Where "cancelled after import" alerts are posted. @defaultValue `RASTRO_ORDER_ALERT_URL`, else none (alerts wait, parked) */
  orderAlertUrl?: string;
  /** The payment provider's REST API that `rastro poll` and serve's poll loop page through. @defaultValue `RASTRO_PROVIDER_URL` */
  providerUrl?: string;
  /** The provider's name, the `source` of polled snapshots. @defaultValue `RASTRO_PROVIDER_SOURCE`, else `pied` */
  providerSource?: string;
  /** Seconds between polls in `rastro serve`; 0 = no poll loop. @defaultValue `RASTRO_POLL_INTERVAL_SECONDS`, else 0 */
  pollIntervalSeconds?: number;
  /** The card acquirer's REST API; without one, charges can be read but not created. @defaultValue `RASTRO_ACQUIRER_URL` */
  acquirerUrl?: string;
  /** The acquirer call's timeout in ms. @defaultValue `RASTRO_ACQUIRER_TIMEOUT_MS`, else 10000 */
  acquirerTimeoutMs?: number;
  /** Seconds a charge may stay PENDING before reconciliation asks; must exceed the timeout. @defaultValue `RASTRO_CHARGE_DEADLINE_SECONDS`, else 120 */
  chargeDeadlineSeconds?: number;
  /** The business deadline: an unaccounted charge goes to review (or is voided) after this. @defaultValue `RASTRO_CHARGE_REVIEW_AFTER_SECONDS`, else 1800 */
  chargeReviewAfterSeconds?: number;
  /** When the acquirer has no capture for a key: `retry` with the same key, or `fail`. @defaultValue `RASTRO_CHARGE_NOT_FOUND`, else retry */
  chargeWhenNotFound?: 'retry' | 'fail';
  /** The deadline rule: `review`, or `void` with the same key. @defaultValue `RASTRO_CHARGE_ON_DEADLINE`, else review */
  chargeOnDeadline?: 'review' | 'void';
  /** Seconds between serve's reconciliation passes; 0 = none. @defaultValue `RASTRO_RECONCILE_INTERVAL_SECONDS`, else 10 */
  reconcileIntervalSeconds?: number;
  /** The processors module `serve` replays and retries with (`--processors`). @defaultValue `RASTRO_PROCESSORS`, else ./rastro.config.js if present */
  processors?: string;
  /** Seconds between serve's incremental audits (`rastro audit`); 0 = none. @defaultValue `RASTRO_AUDIT_INTERVAL_SECONDS`, else 0 */
  auditIntervalSeconds?: number;
  /** Whether `serve` seals the trail (off where it runs as its own role, `rastro seal`). @defaultValue `RASTRO_SEALER` (`on`/`off`), else on */
  sealer?: boolean;
  /** An Ed25519 private key (PEM) that signs digests. @defaultValue `RASTRO_DIGEST_KEY_FILE`, else unsigned digests */
  digestKeyFile?: string;
  /** The public key `rastro verify` trusts digests from (PEM). @defaultValue `RASTRO_DIGEST_PUBLIC_KEY_FILE`, else the key of RASTRO_DIGEST_KEY_FILE */
  digestPublicKeyFile?: string;
  /** Where serve publishes digests: `folder:<path>` or `broker`. @defaultValue `RASTRO_DIGEST_PUBLISH`, else nowhere */
  digestPublish?: string;
  /** Seconds between published digests. @defaultValue `RASTRO_DIGEST_INTERVAL_SECONDS`, else 3600 */
  digestIntervalSeconds?: number;
  /** The master key (32 bytes, hex or base64) that wraps data subjects' keys: reads open personal fields, `rastro forget` erases them. @defaultValue `RASTRO_MASTER_KEY_FILE` */
  masterKeyFile?: string;
}

export interface RastroConfig {
  /** A `postgres://` URL, or the PGlite data folder. */
  readonly databaseUrl: string;
  readonly embedded: boolean;
  readonly dataDir: string;
  readonly schema: string;
  readonly poolSize: number;
  readonly port: number;
  readonly host: string;
  readonly logLevel: string;
  readonly apiKey: string | undefined;
  readonly allowedHosts: readonly string[];
  readonly headersTimeoutSeconds: number;
  readonly requestTimeoutSeconds: number;
  readonly keepAliveTimeoutSeconds: number;
  readonly snapshotEvery: number;
  readonly accountCacheSize: number;
  readonly idempotencyTtlSeconds: number;
  readonly brokerUrl: string | undefined;
  readonly relay: boolean;
  readonly normalizer: boolean;
  readonly subjectPrefix: string;
  readonly natsStream: string;
  readonly natsDuplicateWindowSeconds: number;
  readonly natsReplicas: number;
  readonly amqpExchange: string;
  readonly amqpQueueType: 'classic' | 'quorum';
  readonly inboxAckWaitSeconds: number;
  readonly inboxMaxAckPending: number;
  readonly outboxRetentionDays: number;
  readonly outboxRetention: 'delete' | 'daily-partitions';
  readonly orderAlertUrl: string | undefined;
  readonly providerUrl: string | undefined;
  readonly providerSource: string;
  readonly pollIntervalSeconds: number;
  readonly acquirerUrl: string | undefined;
  readonly acquirerTimeoutMs: number;
  readonly chargeDeadlineSeconds: number;
  readonly chargeReviewAfterSeconds: number;
  readonly chargeWhenNotFound: 'retry' | 'fail';
  readonly chargeOnDeadline: 'review' | 'void';
  readonly reconcileIntervalSeconds: number;
  readonly processors: string | undefined;
  readonly auditIntervalSeconds: number;
  readonly sealer: boolean;
  readonly digestKeyFile: string | undefined;
  readonly digestPublicKeyFile: string | undefined;
  readonly digestPublish: { folder: string } | 'broker' | undefined;
  readonly digestIntervalSeconds: number;
  readonly masterKeyFile: string | undefined;
}

const BROKER_URL = /^(nats|amqps?):\/\/\S+$/;

/** One URL, or a cluster's nodes separated by commas, all NATS or all AMQP. */
function parseBrokerUrl(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  const urls = value.split(',').map((url) => url.trim());
  if (!urls.every((url) => BROKER_URL.test(url))) throw new ConfigError('RASTRO_BROKER_URL must be a nats:// or amqp:// URL, or several separated by commas');
  if (new Set(urls.map((url) => url.startsWith('nats://'))).size > 1) throw new ConfigError('RASTRO_BROKER_URL names NATS and RabbitMQ servers together: list the nodes of one broker');
  return urls.join(',');
}
const TOKEN = /^[A-Za-z0-9_-]{1,100}$/;

function parseSwitch(name: string, value: string | boolean): boolean {
  if (typeof value === 'boolean') return value;
  if (['on', 'true', '1'].includes(value)) return true;
  if (['off', 'false', '0'].includes(value)) return false;
  throw new ConfigError(`${name} must be on or off, got ${JSON.stringify(value)}`);
}

function parseToken(name: string, value: string): string {
  if (!TOKEN.test(value)) throw new ConfigError(`${name} must be 1 to 100 letters, digits, _ or -, got ${JSON.stringify(value)}`);
  return value;
}

function brokerOptions(options: RastroOptions, env: NodeJS.ProcessEnv) {
  const brokerUrl = parseBrokerUrl(options.brokerUrl ?? (env.RASTRO_BROKER_URL || undefined));
  const retention = options.outboxRetention ?? (env.RASTRO_OUTBOX_RETENTION || 'delete');
  if (retention !== 'delete' && retention !== 'daily-partitions') throw new ConfigError('RASTRO_OUTBOX_RETENTION must be delete or daily-partitions');
  return {
    brokerUrl,
    relay: parseSwitch('RASTRO_RELAY', options.relay ?? (env.RASTRO_RELAY || 'on')),
    normalizer: parseSwitch('RASTRO_NORMALIZER', options.normalizer ?? (env.RASTRO_NORMALIZER || 'on')),
    subjectPrefix: parseToken('RASTRO_SUBJECT_PREFIX', options.subjectPrefix ?? (env.RASTRO_SUBJECT_PREFIX || 'rastro')),
    natsStream: parseToken('RASTRO_NATS_STREAM', options.natsStream ?? (env.RASTRO_NATS_STREAM || 'RASTRO')),
    natsDuplicateWindowSeconds: parseCount('RASTRO_NATS_DUPLICATE_WINDOW_SECONDS', options.natsDuplicateWindowSeconds ?? (env.RASTRO_NATS_DUPLICATE_WINDOW_SECONDS || 120), 1),
    natsReplicas: parseCount('RASTRO_NATS_REPLICAS', options.natsReplicas ?? (env.RASTRO_NATS_REPLICAS || 1), 1, 5),
    amqpExchange: parseToken('RASTRO_AMQP_EXCHANGE', options.amqpExchange ?? (env.RASTRO_AMQP_EXCHANGE || 'rastro')),
    amqpQueueType: parseChoice('RASTRO_AMQP_QUEUE_TYPE', options.amqpQueueType ?? (env.RASTRO_AMQP_QUEUE_TYPE || 'classic'), ['classic', 'quorum'] as const),
    inboxAckWaitSeconds: parseCount('RASTRO_INBOX_ACK_WAIT_SECONDS', options.inboxAckWaitSeconds ?? (env.RASTRO_INBOX_ACK_WAIT_SECONDS || 30), 1),
    inboxMaxAckPending: parseCount('RASTRO_INBOX_MAX_ACK_PENDING', options.inboxMaxAckPending ?? (env.RASTRO_INBOX_MAX_ACK_PENDING || 256), 1),
    outboxRetentionDays: parseCount('RASTRO_OUTBOX_RETENTION_DAYS', options.outboxRetentionDays ?? (env.RASTRO_OUTBOX_RETENTION_DAYS || 7), 0),
    outboxRetention: retention,
  } as const;
}

function trailOptions(options: RastroOptions, env: NodeJS.ProcessEnv) {
  const publish = options.digestPublish ?? (env.RASTRO_DIGEST_PUBLISH || undefined);
  let digestPublish: RastroConfig['digestPublish'];
  if (publish === 'broker') digestPublish = 'broker';
  else if (publish?.startsWith('folder:') && publish.length > 'folder:'.length) digestPublish = { folder: publish.slice('folder:'.length) };
  else if (publish !== undefined) throw new ConfigError(`RASTRO_DIGEST_PUBLISH must be folder:<path> or broker, got ${JSON.stringify(publish)}`);
  return {
    sealer: parseSwitch('RASTRO_SEALER', options.sealer ?? (env.RASTRO_SEALER || 'on')),
    digestKeyFile: options.digestKeyFile ?? (env.RASTRO_DIGEST_KEY_FILE || undefined),
    digestPublicKeyFile: options.digestPublicKeyFile ?? (env.RASTRO_DIGEST_PUBLIC_KEY_FILE || undefined),
    digestPublish,
    digestIntervalSeconds: parseCount('RASTRO_DIGEST_INTERVAL_SECONDS', options.digestIntervalSeconds ?? (env.RASTRO_DIGEST_INTERVAL_SECONDS || 3600), 1),
    masterKeyFile: options.masterKeyFile ?? (env.RASTRO_MASTER_KEY_FILE || undefined),
  } as const;
}

function parseChoice<T extends string>(name: string, value: string, choices: readonly T[]): T {
  if (!(choices as readonly string[]).includes(value)) throw new ConfigError(`${name} must be ${choices.join(' or ')}, got ${JSON.stringify(value)}`);
  return value as T;
}

function chargeOptions(options: RastroOptions, env: NodeJS.ProcessEnv) {
  const acquirerTimeoutMs = parseCount('RASTRO_ACQUIRER_TIMEOUT_MS', options.acquirerTimeoutMs ?? (env.RASTRO_ACQUIRER_TIMEOUT_MS || 10_000), 1);
  const chargeDeadlineSeconds = parseCount('RASTRO_CHARGE_DEADLINE_SECONDS', options.chargeDeadlineSeconds ?? (env.RASTRO_CHARGE_DEADLINE_SECONDS || 120), 1);
  if (chargeDeadlineSeconds * 1000 <= acquirerTimeoutMs) {
    throw new ConfigError(`RASTRO_CHARGE_DEADLINE_SECONDS (${chargeDeadlineSeconds}) must exceed RASTRO_ACQUIRER_TIMEOUT_MS (${acquirerTimeoutMs} ms): before the deadline a capture may still be on its way`);
  }
  const chargeReviewAfterSeconds = parseCount('RASTRO_CHARGE_REVIEW_AFTER_SECONDS', options.chargeReviewAfterSeconds ?? (env.RASTRO_CHARGE_REVIEW_AFTER_SECONDS || 1800), 1);
  if (chargeReviewAfterSeconds < chargeDeadlineSeconds) throw new ConfigError('RASTRO_CHARGE_REVIEW_AFTER_SECONDS must be at least RASTRO_CHARGE_DEADLINE_SECONDS');
  return {
    acquirerUrl: parseHttpUrl('RASTRO_ACQUIRER_URL', options.acquirerUrl ?? (env.RASTRO_ACQUIRER_URL || undefined)),
    acquirerTimeoutMs,
    chargeDeadlineSeconds,
    chargeReviewAfterSeconds,
    chargeWhenNotFound: parseChoice('RASTRO_CHARGE_NOT_FOUND', options.chargeWhenNotFound ?? (env.RASTRO_CHARGE_NOT_FOUND || 'retry'), ['retry', 'fail'] as const),
    chargeOnDeadline: parseChoice('RASTRO_CHARGE_ON_DEADLINE', options.chargeOnDeadline ?? (env.RASTRO_CHARGE_ON_DEADLINE || 'review'), ['review', 'void'] as const),
    reconcileIntervalSeconds: parseCount('RASTRO_RECONCILE_INTERVAL_SECONDS', options.reconcileIntervalSeconds ?? (env.RASTRO_RECONCILE_INTERVAL_SECONDS || 10), 0),
  } as const;
}

function parseHttpUrl(name: string, value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  if (!/^https?:\/\/[^\s]+$/.test(value)) throw new ConfigError(`${name} must be an http:// or https:// URL`);
  return value.replace(/\/$/, '');
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

function parseCount(name: string, value: string | number, min: number, max = Number.MAX_SAFE_INTEGER): number {
  const n = typeof value === 'number' ? value : /^\d+$/.test(value) ? Number(value) : NaN;
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    throw new ConfigError(`${name} must be an integer ${max === Number.MAX_SAFE_INTEGER ? `of at least ${min}` : `from ${min} to ${max}`}, got ${JSON.stringify(value)}`);
  }
  return n;
}

function parseSource(value: string): string {
  if (!/^[a-z0-9][a-z0-9_-]{0,39}$/.test(value)) throw new ConfigError(`RASTRO_PROVIDER_SOURCE must be 1 to 40 lowercase letters, digits, dashes or underscores, got ${JSON.stringify(value)}`);
  return value;
}

function parsePort(value: string | number): number {
  const port = typeof value === 'number' ? value : /^\d+$/.test(value) ? Number(value) : NaN;
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new ConfigError(`PORT must be an integer from 0 to 65535, got ${JSON.stringify(value)}`);
  return port;
}

/** The keyless server's extra host names and the timeouts of slow clients. */
function httpEdgeOptions(options: RastroOptions, env: NodeJS.ProcessEnv) {
  const allowedHosts = options.allowedHosts ?? (env.RASTRO_ALLOWED_HOSTS ?? '').split(',').map((host) => host.trim()).filter(Boolean);
  for (const host of allowedHosts) {
    if (!/^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+)(:\d{1,5})?$/.test(host)) throw new ConfigError(`RASTRO_ALLOWED_HOSTS: ${JSON.stringify(host)} is not a host name`);
  }
  const headersTimeoutSeconds = parseCount('RASTRO_HEADERS_TIMEOUT_SECONDS', options.headersTimeoutSeconds ?? (env.RASTRO_HEADERS_TIMEOUT_SECONDS || 10), 1);
  const requestTimeoutSeconds = parseCount('RASTRO_REQUEST_TIMEOUT_SECONDS', options.requestTimeoutSeconds ?? (env.RASTRO_REQUEST_TIMEOUT_SECONDS || 30), 1);
  if (requestTimeoutSeconds < headersTimeoutSeconds) throw new ConfigError('RASTRO_REQUEST_TIMEOUT_SECONDS must be at least RASTRO_HEADERS_TIMEOUT_SECONDS');
  const keepAliveTimeoutSeconds = parseCount('RASTRO_KEEP_ALIVE_TIMEOUT_SECONDS', options.keepAliveTimeoutSeconds ?? (env.RASTRO_KEEP_ALIVE_TIMEOUT_SECONDS || 5), 1);
  return { allowedHosts: Object.freeze(allowedHosts), headersTimeoutSeconds, requestTimeoutSeconds, keepAliveTimeoutSeconds };
}

/**
 * Resolves and validates the configuration once; the result is frozen.
 *
 * @example
 * ```ts
 * const config = resolveConfig({ port: 0 }, process.env)
 * ```
 */
export function resolveConfig(options: RastroOptions = {}, env: NodeJS.ProcessEnv = process.env): RastroConfig {
  const url = options.databaseUrl ?? (env.DATABASE_URL || undefined);
  if (url !== undefined && !/^postgres(ql)?:\/\//.test(url)) throw new ConfigError('DATABASE_URL must be a postgres:// URL');
  const dataDir = options.dataDir ?? (env.RASTRO_DATA_DIR || './.rastro');
  const schema = options.schema ?? (env.RASTRO_SCHEMA || 'rastro');
  quoteSchema(schema);
  const logLevel = options.logLevel ?? (env.RASTRO_LOG_LEVEL || 'info');
  if (!LOG_LEVELS.includes(logLevel)) throw new ConfigError(`RASTRO_LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}`);
  return Object.freeze({
    databaseUrl: url ?? (dataDir === 'memory://' ? dataDir : `${dataDir.replace(/\/$/, '')}/pg`),
    embedded: url === undefined,
    dataDir,
    schema,
    poolSize: parseCount('RASTRO_POOL_SIZE', options.poolSize ?? (env.RASTRO_POOL_SIZE || 10), 1),
    port: parsePort(options.port ?? (env.PORT || 3000)),
    host: options.host ?? (env.HOST || '127.0.0.1'),
    logLevel,
    apiKey: options.apiKey ?? (env.RASTRO_API_KEY || undefined),
    ...httpEdgeOptions(options, env),
    snapshotEvery: parseCount('RASTRO_SNAPSHOT_EVERY', options.snapshotEvery ?? (env.RASTRO_SNAPSHOT_EVERY || 100), 0),
    accountCacheSize: parseCount('RASTRO_ACCOUNT_CACHE_SIZE', options.accountCacheSize ?? (env.RASTRO_ACCOUNT_CACHE_SIZE || 10_000), 0),
    idempotencyTtlSeconds: parseCount('RASTRO_IDEMPOTENCY_TTL_SECONDS', options.idempotencyTtlSeconds ?? (env.RASTRO_IDEMPOTENCY_TTL_SECONDS || 86_400), 1),
    ...brokerOptions(options, env),
    orderAlertUrl: parseHttpUrl('RASTRO_ORDER_ALERT_URL', options.orderAlertUrl ?? (env.RASTRO_ORDER_ALERT_URL || undefined)),
    providerUrl: parseHttpUrl('RASTRO_PROVIDER_URL', options.providerUrl ?? (env.RASTRO_PROVIDER_URL || undefined)),
    providerSource: parseSource(options.providerSource ?? (env.RASTRO_PROVIDER_SOURCE || 'pied')),
    pollIntervalSeconds: parseCount('RASTRO_POLL_INTERVAL_SECONDS', options.pollIntervalSeconds ?? (env.RASTRO_POLL_INTERVAL_SECONDS || 0), 0),
    ...chargeOptions(options, env),
    processors: options.processors ?? (env.RASTRO_PROCESSORS || undefined),
    auditIntervalSeconds: parseCount('RASTRO_AUDIT_INTERVAL_SECONDS', options.auditIntervalSeconds ?? (env.RASTRO_AUDIT_INTERVAL_SECONDS || 0), 0),
    ...trailOptions(options, env),
  });
}
