import { CAPTURE_EFFECT } from '../../charges/sql.js';
import { keysetPages, slices } from '../keyset-pages.js';
import { changedSince, foundSubjects, rememberedSubjects, type AuditCheck, type CheckContext, type Finding } from '../finding.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** Charges examined per statement. */
const CHARGES_PER_CHUNK = 20_000;
/** Stale and in-review charges listed per audit, oldest first. */
const OPEN_LIMIT = 1000;

/** The outbox message each settled state must have, and the message each forbids. */
const TERMINAL: Record<string, { status: string; needs: string }> = {
  done: { status: 'CAPTURED', needs: 'ChargeCaptured' },
  failed: { status: 'FAILED', needs: 'ChargeFailed' },
  'needs-review': { status: 'NEEDS_REVIEW', needs: 'ChargeNeedsReview' },
};

function chargesSql(s: string) {
  /**
   * Per charge of `ids`, its ledger entry and its outbox messages by type, and whether retention
   * ($2 days) may have deleted its ChargeStarted or its settled message by now.
   */
  const messages = `with ids as (select unnest($1::uuid[]) as id),
    m as (select aggregate_id, json_object_agg(type, n)::text as messages from (
        -- A join, not = any(array(…)): the planner hashes the ids instead of comparing each row with all of them.
        select o.aggregate_id, o.type, count(*)::int as n from ${s}.outbox o join ids on o.aggregate_id = ids.id::text
         where o.aggregate_type = 'charge' group by 1, 2) t
      group by aggregate_id)
    select c.id, e.state, e.key is not null as has_entry,
      c.created_at < now() - $2 * interval '1 day' as start_retainable,
      coalesce(e.updated_at < now() - $2 * interval '1 day', false) as settle_retainable,
      coalesce(m.messages, '{}') as messages
    from ids join ${s}.charges c on c.id = ids.id left join ${s}.effects e on e.key = 'charge:' || c.id::text
      left join m on m.aggregate_id = c.id::text`;
  return {
    messages,
    /**
     * What changed since the last audit, each table read on its own (one statement each, so none
     * is joined whole): charges written since ($1..$3), capture entries written since, and
     * charges with new outbox messages ($1, $2 the range of transaction orders).
     */
    changedCharges: `select c.id from ${s}.charges c where ${changedSince('c', 1, 'created_at')}`,
    changedEntries: `select substr(f.key, 8) as id from ${s}.effects f where f.effect_type = '${CAPTURE_EFFECT}' and ${changedSince('f', 1, 'updated_at')}`,
    /** Capture entries among $1 whose charge row is missing. */
    orphans: `select f.key from ${s}.effects f where f.key = any($1::text[])
      and not exists (select 1 from ${s}.charges c where 'charge:' || c.id::text = f.key)`,
    /** Every capture entry whose charge row is missing (a full audit). */
    allOrphans: `select f.key from ${s}.effects f where f.effect_type = '${CAPTURE_EFFECT}'
      and not exists (select 1 from ${s}.charges c where 'charge:' || c.id::text = f.key) limit ${OPEN_LIMIT}`,
    newMessages: `select distinct o.aggregate_id as id from ${s}.outbox o where o.aggregate_type = 'charge' and o.tx_order >= $1 and o.tx_order < $2`,
    /** Every charge, in id order from $1: the chunks of a full audit. */
    page: `select id from ${s}.charges where id > $1 order by id limit ${CHARGES_PER_CHUNK}`,
    /** PENDING past the deadline ($1 ms), and NEEDS_REVIEW: money in an unknown place, oldest first. */
    open: `select substr(key, 8) as id, state, error, extract(epoch from now() - reserved_at)::float8 as age from ${s}.effects
      where effect_type = '${CAPTURE_EFFECT}' and (state = 'needs-review'
        or (state in ('reserved', 'uncertain') and reserved_at < now() - $1 * interval '1 millisecond'))
      order by reserved_at limit $2`,
  } as const;
}

interface ChargeRow {
  id: string;
  state: string | null;
  has_entry: boolean;
  start_retainable: boolean;
  settle_retainable: boolean;
  messages: string;
}

export interface ChargesCheckOptions {
  /** How long a charge may stay PENDING (RASTRO_CHARGE_DEADLINE_SECONDS), in ms. @defaultValue 2 min */
  deadlineMs?: number;
  /** Published outbox messages are deleted after this many days: older charges may have lost theirs. @defaultValue 7 */
  retentionDays?: number;
}

/** What is wrong with one charge's trail (none when it is whole). */
function chargeDefects(row: ChargeRow): string[] {
  const counts = JSON.parse(row.messages) as Record<string, number>;
  const defects: string[] = [];
  if (!row.has_entry) return ['it has no capture entry in the effect ledger: its status is unknown'];
  if (!counts.ChargeStarted && !row.start_retainable) defects.push('its ChargeStarted message is missing from the outbox');
  const terminal = row.state ? TERMINAL[row.state] : undefined;
  if (terminal && !counts[terminal.needs] && !row.settle_retainable) defects.push(`it is ${terminal.status} without its ${terminal.needs} message`);
  for (const [state, other] of Object.entries(TERMINAL)) {
    if (state !== row.state && counts[other.needs] && !(other.needs === 'ChargeNeedsReview' && row.state !== null && row.state !== 'reserved' && row.state !== 'uncertain')) {
      defects.push(`it has a ${other.needs} message but is ${terminal?.status ?? 'PENDING'}`);
    }
  }
  for (const [type, n] of Object.entries(counts)) if (n > 1) defects.push(`its ${type} message is written ${n} times`);
  return defects;
}

/** The defects of the charges `ids`, and the ids that have no charge row (an entry or message without its charge). */
async function examine(ctx: CheckContext, sql: ReturnType<typeof chargesSql>, ids: string[], retentionDays: number): Promise<{ bad: Map<string, string[]>; missing: string[] }> {
  const { rows } = await ctx.db.query<ChargeRow>(sql.messages, [ids, retentionDays]);
  const bad = new Map<string, string[]>();
  for (const row of rows) {
    const defects = chargeDefects(row);
    if (defects.length > 0) bad.set(row.id, defects);
  }
  const found = new Set(rows.map((row) => row.id));
  return { bad, missing: ids.filter((id) => !found.has(id)) };
}

/** The charges to examine: every one in chunks (full), or those changed since the last audit and those found wrong then. */
async function* chargeChunks(ctx: CheckContext, sql: ReturnType<typeof chargesSql>): AsyncGenerator<string[]> {
  if (ctx.scope.full) {
    const page = async (after: string) => (await ctx.db.query<{ id: string }>(sql.page, [after])).rows.map((r) => r.id);
    return yield* keysetPages(page, '00000000-0000-0000-0000-000000000000', CHARGES_PER_CHUNK);
  }
  const ids = async (text: string, values: readonly unknown[]) => (await ctx.db.query<{ id: string }>(text, values)).rows.map((r) => r.id);
  const changed = [
    ...(await ids(sql.changedCharges, ctx.scope.changed)),
    ...(await ids(sql.changedEntries, ctx.scope.changed)),
    ...(await ids(sql.newMessages, [ctx.scope.fromTxOrder, ctx.scope.frontier])),
  ].filter((id) => UUID.test(id));
  yield* slices([...new Set([...changed, ...rememberedSubjects(ctx.memory)])], CHARGES_PER_CHUNK);
}

/**
 * Charges: each has its capture entry and its ChargeStarted; CAPTURED has ChargeCaptured,
 * FAILED ChargeFailed, NEEDS_REVIEW ChargeNeedsReview, none twice and none contradicting the
 * status; no PENDING charge past the deadline, and the charges in review.
 */
export function chargesCheck(options: ChargesCheckOptions = {}): AuditCheck {
  const retentionDays = options.retentionDays ?? 7;
  return {
    name: 'charges',
    summary: 'every charge has its ledger entry, ChargeStarted and the message of its status; stale PENDING and NEEDS_REVIEW charges',
    async run(ctx) {
      const sql = chargesSql(ctx.s);
      const findings: Finding[] = [];
      let examined = 0;
      const missing: string[] = [];
      for await (const ids of chargeChunks(ctx, sql)) {
        const result = await examine(ctx, sql, ids, retentionDays);
        missing.push(...result.missing);
        for (const [id, defects] of result.bad) {
          findings.push({ check: 'charges', kind: 'trail-broken', subject: { type: 'charge', id }, detail: defects.join('; '),
            action: 'compare with the acquirer (rastro audit --ask-providers) and restore the missing rows from a backup' });
        }
        ctx.progress((examined += ids.length));
      }
      const orphans = ctx.scope.full
        ? (await ctx.db.query<{ key: string }>(sql.allOrphans)).rows
        : (await ctx.db.query<{ key: string }>(sql.orphans, [missing.map((id) => `charge:${id}`)])).rows;
      for (const row of orphans) {
        findings.push({ check: 'charges', kind: 'charge-missing', subject: { type: 'effect', id: row.key }, detail: 'a capture entry whose charge row is missing', action: 'restore the charge row from a backup' });
      }
      // A charge-missing finding names the entry (charge:<id>): remembered by the charge's id.
      const remembered = foundSubjects(findings).map((id) => (id.startsWith('charge:') ? id.slice('charge:'.length) : id));
      const { rows: open } = await ctx.db.query<{ id: string; state: string; error: string | null; age: number }>(sql.open, [options.deadlineMs ?? 120_000, OPEN_LIMIT]);
      for (const row of open) {
        const review = row.state === 'needs-review';
        findings.push({
          check: 'charges', kind: review ? 'needs-review' : 'stale-pending', subject: { type: 'charge', id: row.id },
          detail: review ? `NEEDS_REVIEW: ${(row.error ?? '').slice(0, 300)}` : `PENDING past the deadline: the money is in an unknown place${row.error ? ` (${row.error.slice(0, 200)})` : ''}`,
          action: review ? 'check with the acquirer, then settle it from the console\'s review queue' : 'rastro reconcile (is serve\'s reconciliation loop running, with RASTRO_ACQUIRER_URL set?)',
          ageSeconds: Number(row.age),
        });
      }
      return { findings, examined, memory: { found: remembered } };
    },
  };
}
