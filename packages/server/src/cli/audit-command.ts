import { InvalidArgumentError, Option, type Command } from 'commander';
import { AUDIT_CHECKS, runAudit, validateCheckNames, type AuditReport } from 'rastro/internal/audit/run-audit.js';
import { AuditFindingsError } from 'rastro/internal/errors.js';
import { auditSettings } from '../operations/audit-settings.js';
import { serveProcessors } from '../operations/serve-processors.js';
import { isoDate, jsonOption, processorsOption } from './options.js';
import { printJson, table } from './output.js';
import { startProgress } from './progress.js';
import { withServices } from './services.js';

export interface AuditCommandOptions {
  full?: boolean;
  check?: string[];
  since?: Date;
  askProviders?: boolean;
  json?: boolean;
  processors?: string;
  inboxDurable?: string;
}

const age = (seconds: number | undefined) => {
  if (seconds === undefined) return '';
  const s = Math.round(seconds);
  return s >= 86_400 ? `${Math.floor(s / 86_400)}d` : s >= 3600 ? `${Math.floor(s / 3600)}h` : s >= 60 ? `${Math.floor(s / 60)}m` : `${s}s`;
};

function printReport(report: AuditReport): void {
  console.log(table(['check', 'examined', 'findings', 'how'], report.checks.map((c) => [c.name, c.examined, c.findings, c.incremental ? 'since the last audit' : 'everything'])));
  if (report.findings.length === 0) {
    console.log('\nclean: nothing lost, doubled or left behind');
    return;
  }
  console.log('');
  console.log(table(['check', 'finding', 'row', 'age', 'what is wrong', 'what to do'],
    report.findings.map((f) => [f.check, f.kind, `${f.subject.type} ${f.subject.id}`, age(f.ageSeconds), f.detail, f.action])));
}

/**
 * `rastro audit`: proves on the running deployment that nothing was lost, doubled or left
 * behind, read-only and beside live traffic. Exit 0 clean, 1 found something, 2 misuse.
 */
export async function auditCommand(options: AuditCommandOptions): Promise<void> {
  const report = await withServices(async (services, config) => {
    const processors = await serveProcessors(services, options.processors);
    const progress = startProgress();
    try {
      return await runAudit(services.store, {
        ...auditSettings(config, processors, services.charges, options.inboxDurable),
        full: options.full, checks: options.check, since: options.since, askProviders: options.askProviders,
        onProgress: (check, examined) => progress.show(`${check}: ${examined} examined`, { state: check }),
      });
    } finally {
      progress.end();
    }
  });
  if (options.json) printJson(report);
  else printReport(report);
  if (!report.clean) throw new AuditFindingsError(report.findings.length);
}

function checkList(value: string): string[] {
  try {
    return validateCheckNames(value.split(',').map((name) => name.trim()).filter((name) => name.length > 0));
  } catch (err) {
    throw new InvalidArgumentError(`--check: ${(err as Error).message.replace(/^check: /, '')}`);
  }
}

/** `rastro audit [--full] [--check name,…] [--since <ts>] [--ask-providers] [--json] [--processors path]`. */
export function registerAuditCommand(program: Command): void {
  program.command('audit')
    .summary('prove on the running deployment that nothing was lost, doubled or left behind')
    .description(
      `Checks the invariants on the live database, read-only and beside live traffic: ${AUDIT_CHECKS.join(', ')}. Each check examines what changed since its last audit (--full: everything) and says, per finding, the row and what to do. Exit 0 when clean, 1 when something was found, 2 for misuse. docs/audit.md says what each check proves.`,
    )
    .option('--full', 'examine everything, not only what changed since the last audit')
    .addOption(new Option('--check <names>', `only these checks, comma-separated (${AUDIT_CHECKS.join(', ')})`).argParser(checkList))
    .addOption(new Option('--since <ts>', 'examine what changed since this time (ISO 8601) instead of since the last audit').argParser(isoDate('--since')).conflicts('full'))
    .option('--ask-providers', 'also ask the providers (the acquirer, effect types that declare reconcile) about settled keys, at a bounded rate')
    .option('--inbox-durable <name>', "the inbox's JetStream durable (rastro consume --durable), whose acknowledged messages the broker check looks for in the log (default rastro-inbox)")
    .addOption(jsonOption())
    .addOption(processorsOption())
    .action((options: AuditCommandOptions) => auditCommand(options));
}
