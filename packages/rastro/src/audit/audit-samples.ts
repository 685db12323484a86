import type { Database } from '../db/database.js';
import type { FigureSample } from '../observability/figure-sample.js';
import { auditLog } from './audit-log.js';

/**
 * The audit's metrics from the latest recorded audit: `rastro_audit_findings{check}` for each
 * check it ran, and `rastro_audit_last_clean_timestamp_seconds`, when an audit of every check
 * last found nothing (absent before the first clean one).
 */
export async function auditSamples(db: Database, schema: string): Promise<FigureSample[]> {
  const log = auditLog(db, schema);
  const [latest, lastClean] = await Promise.all([log.latestSummary(), log.lastClean()]);
  const samples: FigureSample[] = (latest?.checks ?? []).map((check) => ({
    name: 'rastro_audit_findings', help: 'Findings of the latest audit, per check (0: the check found nothing)', labels: { check: check.name }, value: check.findings,
  }));
  if (lastClean) samples.push({ name: 'rastro_audit_last_clean_timestamp_seconds', help: 'When an audit of every check last found nothing (Unix time)', value: lastClean.getTime() / 1000 });
  return samples;
}
