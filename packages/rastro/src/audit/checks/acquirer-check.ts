import type { ListedCapture } from '../../charges/acquirer.js';
import type { AuditCheck, Finding } from '../finding.js';
import { missingKeys } from './keys-missing.js';

export interface AcquirerCheckOptions {
  /** The acquirer's captures since a time; without it the check lists nothing. */
  listCaptures?: (since: Date) => AsyncIterable<ListedCapture>;
  /** The start of the window the acquirer is asked about. */
  since: Date;
}

const missingSql = (s: string) => `select k.key from unnest($1::text[]) k(key) where not exists (select 1 from ${s}.charges c where c.idempotency_key = k.key)`;

function finding(capture: ListedCapture): Finding {
  const { idempotencyKey: key, amountCents, currency, captureId, capturedAt } = capture;
  return {
    check: 'acquirer', kind: 'capture-without-charge', subject: { type: 'capture', id: key },
    detail: `the acquirer captured ${amountCents} ${currency} (${captureId}, ${capturedAt.toISOString()}) with idempotency key ${key}, and no charge here has that key: its record was lost (a failover's lost tail, a restore)`,
    action: `do not capture it again: recreate the charge with POST /charges, Idempotency-Key ${key} and the same amount and customer (the acquirer answers with this capture and moves no money), or refund it at the acquirer`,
    ageSeconds: Math.max(0, (Date.now() - capturedAt.getTime()) / 1000),
  };
}

/**
 * Acquirer (only with `--ask-providers`): lists the acquirer's captures since the window's start
 * and reports each that no charge here accounts for: money moved for a charge the database no
 * longer has, which no reconciliation can find because it starts from local rows.
 */
export function acquirerCheck(options: AcquirerCheckOptions): AuditCheck {
  return {
    name: 'acquirer',
    summary: "lists the acquirer's captures and reports each with no charge here",
    async run(ctx) {
      if (!options.listCaptures) return { findings: [], examined: 0, memory: {}, figures: { listed: null } };
      const findings: Finding[] = [];
      let examined = 0;
      for await (const batch of missingKeys(ctx.db, options.listCaptures(options.since), (c) => c.idempotencyKey, missingSql(ctx.s))) {
        examined += batch.examined;
        findings.push(...batch.missing.map(finding));
        ctx.progress(examined);
      }
      return { findings, examined, memory: {}, figures: { listed: examined } };
    },
  };
}
