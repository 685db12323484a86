import { setTimeout as sleep } from 'node:timers/promises';
import { CAPTURE_EFFECT } from '../../charges/sql.js';
import type { EffectTypes, ReconcileAnswer, UnsettledEffect } from '../../processing/ledger/effect-type.js';
import { changedSince, type AuditCheck, type Finding } from '../finding.js';

function providersSql(s: string) {
  return {
    /** Settled entries (and those in review) of types $4 written since the last audit ($1..$3), oldest first, at most $5. */
    since: `select key, event_id, effect_type, state, reserved_at, checks, error from ${s}.effects f
      where f.effect_type = any($4::text[]) and f.state in ('done', 'failed', 'needs-review') and ${changedSince('f', 1, 'updated_at')}
      order by f.updated_at limit $5`,
    /** A random sample of $2 settled entries (and those in review) of types $1. */
    sample: `select key, event_id, effect_type, state, reserved_at, checks, error from ${s}.effects
      where effect_type = any($1::text[]) and state in ('done', 'failed', 'needs-review') order by random() limit $2`,
  } as const;
}

interface EntryRow {
  key: string;
  event_id: string | null;
  effect_type: string;
  state: 'done' | 'failed' | 'needs-review';
  reserved_at: Date;
  checks: number;
  error: string | null;
}

export interface ProvidersCheckOptions {
  /** The effect types that can ask their provider (charges' capture, the processors' declared ones). */
  types: EffectTypes;
  /** Keys asked in a full audit, at random; an incremental one asks about every key settled since, up to this. @defaultValue 100 */
  sample?: number;
  /** Questions per second at most. @defaultValue 10 */
  perSecond?: number;
}

const subjectOf = (row: EntryRow) => (row.effect_type === CAPTURE_EFFECT ? { type: 'charge' as const, id: row.key.slice('charge:'.length) } : { type: 'effect' as const, id: row.key });

/** The finding for one disagreement between the ledger and the provider's answer, if any. */
function disagreement(row: EntryRow, answer: ReconcileAnswer): Finding | undefined {
  const charge = row.effect_type === CAPTURE_EFFECT;
  const here = charge ? { done: 'CAPTURED', failed: 'FAILED', 'needs-review': 'NEEDS_REVIEW' }[row.state] : row.state;
  const base = { check: 'providers', subject: subjectOf(row) };
  if (row.state === 'failed' && answer.status === 'happened') {
    return { ...base, kind: 'provider-says-happened', detail: `${here} here, but the provider says it happened${charge ? ' (captured at the acquirer)' : ''}`, action: charge ? 'refund or settle it with the customer; correct the charge from the review queue' : `correct the entry: rastro effects resolve is for uncertain ones; restore ${row.key} from the provider's record` };
  }
  if (row.state === 'done' && answer.status === 'did-not-happen') {
    return { ...base, kind: 'provider-has-no-record', detail: `${here} here, but the provider has no record of the key`, action: charge ? 'ask the acquirer about the capture before shipping: the money may never have moved' : 'ask the provider; perform it again with the same key if it is missing' };
  }
  if (row.state === 'needs-review' && answer.status !== 'unknown') {
    const as = answer.status === 'happened' ? 'done' : 'failed';
    return { ...base, kind: 'review-answerable', detail: `in review, but the provider now says it ${answer.status === 'happened' ? 'happened' : 'did not happen'}`, action: charge ? 'settle it from the review queue by the acquirer\'s answer' : `rastro effects resolve ${row.key} --as ${as}` };
  }
  return undefined;
}

/**
 * Providers (only with `--ask-providers`): asks the provider of each effect type that declares
 * `reconcile`, charges' acquirer among them, about settled keys (all since the last audit, or a
 * sample), at a bounded rate, and reports every disagreement with the ledger.
 */
export function providersCheck(options: ProvidersCheckOptions): AuditCheck {
  const sample = options.sample ?? 100;
  const gapMs = 1000 / (options.perSecond ?? 10);
  return {
    name: 'providers',
    summary: 'asks the providers about settled keys and reports every disagreement with the ledger',
    async run(ctx) {
      const names = Object.keys(options.types);
      const sql = providersSql(ctx.s);
      const rows = names.length === 0 ? [] : ctx.scope.full
        ? (await ctx.db.query<EntryRow>(sql.sample, [names, sample])).rows
        : (await ctx.db.query<EntryRow>(sql.since, [...ctx.scope.changed, names, sample])).rows;
      const findings: Finding[] = [];
      let unknown = 0;
      for (const [i, row] of rows.entries()) {
        if (i > 0) await sleep(gapMs);
        const effect = { key: row.key, eventId: row.event_id, effectType: row.effect_type, state: row.state, reservedAt: row.reserved_at, checks: row.checks, error: row.error } as unknown as UnsettledEffect;
        let answer: ReconcileAnswer;
        try {
          answer = await options.types[row.effect_type]!.reconcile(row.key, effect);
        } catch {
          answer = { status: 'unknown' };
        }
        if (answer.status === 'unknown') unknown++;
        const found = disagreement(row, answer);
        if (found) findings.push(found);
        ctx.progress(i + 1);
      }
      return { findings, examined: rows.length, memory: {}, figures: { asked: rows.length, unknown } };
    },
  };
}
