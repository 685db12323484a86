import { CAPTURE_EFFECT } from '../../charges/sql.js';
import { runnerIsGone } from '../../processing/sql.js';
import { changedSince, foundSubjects, rememberedSubjects, type AuditCheck, type CheckContext, type Finding } from '../finding.js';

/** Open entries listed per audit (uncertain, in review, abandoned), oldest first. */
const OPEN_LIMIT = 1000;

function effectsSql(s: string) {
  return {
    /**
     * Reservations whose owner's liveness lock is gone, that no live reconciler holds: left
     * behind. Request-path reservations (owner 0, a charge's capture) are the charges check's.
     */
    abandoned: `select key, effect_type, owner_token, extract(epoch from now() - reserved_at)::float8 as age from ${s}.effects f
      where f.state = 'reserved' and f.owner_token <> 0 and ${runnerIsGone('f.owner_token')}
        and (f.checked_by is null or ${runnerIsGone('f.checked_by')})
      order by f.reserved_at limit $1`,
    /** The same entries read again, now: still reserved by the same owner, and the owner still gone. */
    stillAbandoned: `select key from ${s}.effects f where f.key = any($1::text[]) and f.state = 'reserved'
      and f.owner_token = any($2::int[]) and ${runnerIsGone('f.owner_token')} and (f.checked_by is null or ${runnerIsGone('f.checked_by')})`,
    /** Entries waiting for a provider's answer or a person: uncertain and needs-review (charges apart). */
    open: `select key, effect_type, state, error, extract(epoch from now() - reserved_at)::float8 as age from ${s}.effects
      where state in ('uncertain', 'needs-review') and effect_type <> '${CAPTURE_EFFECT}' order by reserved_at limit $1`,
    /**
     * Entries written since the last audit ($1..$3, see changedSince) or found wrong last time
     * ($4): how many, and those whose event is missing or that are done without an outcome.
     * One pass over the ledger.
     */
    broken: `with examined as materialized (
        select f.key, f.event_id, f.state, f.result is null as no_result from ${s}.effects f
        where ${changedSince('f', 1, 'updated_at')} or f.key = any($4::text[]))
      select (select count(*) from examined)::bigint as examined,
        coalesce((select json_agg(json_build_object('key', x.key, 'eventId', x.event_id, 'noEvent', x.no_event)) from (
          select e.key, e.event_id, e.event_id is not null and not exists (select 1 from ${s}.events ev where ev.id = e.event_id) as no_event
            from examined e
           where (e.state = 'done' and e.no_result) or (e.event_id is not null and not exists (select 1 from ${s}.events ev where ev.id = e.event_id))
           limit $5) x), '[]')::text as broken`,
  } as const;
}

async function abandonedFindings(ctx: CheckContext, sql: ReturnType<typeof effectsSql>): Promise<Finding[]> {
  const { rows } = await ctx.db.query<{ key: string; effect_type: string; owner_token: number; age: number }>(sql.abandoned, [OPEN_LIMIT]);
  if (rows.length === 0) return [];
  // Locks are not in any snapshot: read the rows again, so an owner that finished and left
  // between the two reads is not reported.
  const { rows: still } = await ctx.db.query<{ key: string }>(sql.stillAbandoned, [rows.map((r) => r.key), rows.map((r) => r.owner_token)]);
  const confirmed = new Set(still.map((r) => r.key));
  return rows.filter((row) => confirmed.has(row.key)).map((row) => ({
    check: 'effects', kind: 'abandoned-reservation', subject: { type: 'effect', id: row.key },
    detail: `reserved by runner ${row.owner_token}, whose lock is gone, and neither swept nor being reconciled: the call may or may not have happened`,
    action: `rastro sweep (keep → uncertain, release → released), or rastro reconcile when ${row.effect_type} can ask its provider`,
    ageSeconds: Number(row.age),
  }));
}

/**
 * The effect ledger: no reservation left by a dead owner, the uncertain and in-review entries
 * with their age, every entry's event present, and every done entry with its outcome.
 */
export const effectsCheck: AuditCheck = {
  name: 'effects',
  summary: 'no reservation left by a dead owner; uncertain and in-review entries; every entry\'s event exists; every done entry has its outcome',
  async run(ctx) {
    const sql = effectsSql(ctx.s);
    const findings = await abandonedFindings(ctx, sql);
    const open = (await ctx.db.query<{ key: string; effect_type: string; state: string; error: string | null; age: number }>(sql.open, [OPEN_LIMIT])).rows;
    for (const row of open) {
      findings.push({
        check: 'effects', kind: row.state === 'uncertain' ? 'uncertain' : 'needs-review', subject: { type: 'effect', id: row.key },
        detail: `${row.effect_type} ${row.state}: ${(row.error ?? 'no error recorded').slice(0, 300)}`,
        action: `check with the provider, then rastro effects resolve ${row.key} --as done|failed|retry (or rastro reconcile, for a type that can ask)`,
        ageSeconds: Number(row.age),
      });
    }
    const row = (await ctx.db.query<{ examined: number; broken: string }>(sql.broken, [...ctx.scope.changed, rememberedSubjects(ctx.memory), OPEN_LIMIT])).rows[0]!;
    const broken: Finding[] = (JSON.parse(row.broken) as { key: string; eventId: string | null; noEvent: boolean }[]).map((entry) => entry.noEvent
      ? { check: 'effects', kind: 'event-missing', subject: { type: 'effect', id: entry.key }, detail: `its event ${entry.eventId} is not in the log`, action: 'restore the event from a backup: the ledger entry says it caused an effect' }
      : { check: 'effects', kind: 'outcome-missing', subject: { type: 'effect', id: entry.key }, detail: 'done, but its outcome (the result of the call) is not recorded', action: 'restore the entry from a backup, or ask the provider for the result of this key' });
    findings.push(...broken);
    const examined = Number(row.examined);
    ctx.progress(examined);
    return { findings, examined, memory: { found: foundSubjects(broken) } };
  },
};
