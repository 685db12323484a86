import type { Queryable } from '../../db/database.js';
import { rememberedSubjects, type AuditCheck, type CheckContext, type Finding } from '../finding.js';
import { slices } from '../keyset-pages.js';

/** The triggers that make the log immutable (migration 0001), and the constraints that make a version unique. */
const IMMUTABILITY_TRIGGERS = ['events_immutable_rows', 'events_immutable_truncate'] as const;

/** Streams examined per statement in a full audit. */
const STREAMS_PER_CHUNK = 5000;

function logSql(s: string) {
  /** Streams among `$1` (or in the key range $2..$3) whose versions are not 1..n with n the stream's version. */
  const badStreams = (where: string) => `with agg as (
      select stream_id, count(*)::bigint as n, min(stream_version)::bigint as lo, max(stream_version)::bigint as hi
        from ${s}.events where ${where} group by stream_id),
    st as (select stream_id, version from ${s}.streams where ${where})
    select coalesce(a.stream_id, st.stream_id) as stream_id, a.n, a.lo, a.hi, st.version
      from agg a full join st on st.stream_id = a.stream_id
     where a.stream_id is null or st.stream_id is null or a.n <> a.hi or a.lo <> 1 or a.hi <> st.version`;
  return {
    /** The triggers on the events table: name, whether it fires always ('A'), and its row's version (xmin). */
    triggers: `select t.tgname as name, t.tgenabled as enabled, t.xmin::text as row_version
      from pg_trigger t join pg_class c on c.oid = t.tgrelid join pg_namespace n on n.oid = c.relnamespace
      where n.nspname = $1 and c.relname = 'events' and t.tgname = any($2::text[])`,
    /** Streams with events in the audited range of the log: the new ones, since the last audit. */
    touchedStreams: `select distinct stream_id from ${s}.events where tx_order >= $1 and tx_order < $2`,
    badStreamsOf: badStreams('stream_id = any($1::text[])'),
    badStreamsInRange: badStreams('stream_id >= $1 and ($2::text is null or stream_id < $2)'),
    /** The first stream id of the next chunk of `STREAMS_PER_CHUNK` after $1 (null: the rest is one chunk). */
    /** Streams from $1 up to $2 (null: the end): the chunk's size, for the count of streams examined. */
    chunkSize: `select count(*)::int as n from ${s}.streams where stream_id >= $1 and ($2::text is null or stream_id < $2)`,
    chunkEnd: `select stream_id from ${s}.streams where stream_id >= $1 order by stream_id offset ${STREAMS_PER_CHUNK} limit 1`,
    /** The missing versions of a stream (at most 20 of them), and the repeated ones. */
    missingVersions: `select v::bigint from generate_series(1::bigint, $2::bigint) v
      where not exists (select 1 from ${s}.events e where e.stream_id = $1 and e.stream_version = v) order by v limit 20`,
  } as const;
}

interface BadStream {
  stream_id: string;
  n: number | null;
  lo: number | null;
  hi: number | null;
  version: number | null;
}

async function triggerFindings(ctx: CheckContext, sql: ReturnType<typeof logSql>): Promise<{ findings: Finding[]; versions: Record<string, string>; altered: boolean }> {
  const { rows } = await ctx.db.query<{ name: string; enabled: string; row_version: string }>(sql.triggers, [ctx.schema, IMMUTABILITY_TRIGGERS]);
  const seen = (ctx.memory.triggers ?? {}) as Record<string, string>;
  const findings: Finding[] = [];
  const versions: Record<string, string> = {};
  for (const name of IMMUTABILITY_TRIGGERS) {
    const row = rows.find((r) => r.name === name);
    const subject = { type: 'trigger' as const, id: name };
    if (!row) findings.push({ check: 'log', kind: 'trigger-missing', subject, detail: `the trigger ${name} on events is missing: events can be changed or deleted`, action: 'recreate it (migration 0001), then run `rastro audit --full --check log`' });
    else {
      versions[name] = row.row_version;
      if (row.enabled !== 'A') {
        const how = row.enabled === 'D' ? 'disabled' : 'not set to fire always (it is skipped under some replication roles)';
        findings.push({ check: 'log', kind: 'trigger-disabled', subject, detail: `the trigger ${name} on events is ${how}: events can be changed or deleted`, action: `alter table events enable always trigger ${name}, then run \`rastro audit --full --check log\`` });
      }
    }
  }
  // A trigger whose row changed since the last audit was altered (disabled and enabled again, or
  // recreated): the log may have changed anywhere meanwhile, so it is examined whole.
  const altered = Object.keys(seen).length > 0 && IMMUTABILITY_TRIGGERS.some((name) => seen[name] !== versions[name]);
  return { findings, versions, altered };
}

async function streamFinding(q: Queryable, sql: ReturnType<typeof logSql>, row: BadStream): Promise<Finding> {
  const subject = { type: 'stream' as const, id: row.stream_id };
  const action = 'restore the missing events from a backup; events are never rewritten in place';
  if (row.n === null) return { check: 'log', kind: 'stream-without-events', subject, detail: `the stream is at version ${row.version} but has no events`, action };
  if (row.version === null) return { check: 'log', kind: 'events-without-stream', subject, detail: `${row.n} events (versions ${row.lo}..${row.hi}) belong to no stream row`, action: 'restore the stream row from a backup' };
  if (Number(row.n) > Number(row.hi) - Number(row.lo) + 1) return { check: 'log', kind: 'version-repeated', subject, detail: `${row.n} events for versions ${row.lo}..${row.hi}: a version is repeated`, action };
  const top = Math.max(Number(row.hi), Number(row.version));
  const { rows } = await q.query<{ v: number }>(sql.missingVersions, [row.stream_id, top]);
  const missing = rows.map((r) => Number(r.v));
  const beyond = Number(row.hi) < Number(row.version) ? `; the stream row says version ${row.version}, its last event is ${row.hi}` : Number(row.hi) > Number(row.version) ? `; events go past the stream row's version ${row.version}` : '';
  return { check: 'log', kind: 'version-gap', subject, detail: `versions missing: ${missing.join(', ') || 'none'}${beyond}`, action };
}

/** Every stream, a chunk of streams at a time, each chunk one statement. */
async function fullScan(ctx: CheckContext, sql: ReturnType<typeof logSql>, onChunk: (rows: BadStream[], streams: number) => Promise<void>): Promise<void> {
  let from = '';
  for (;;) {
    const end = (await ctx.db.query<{ stream_id: string }>(sql.chunkEnd, [from])).rows[0]?.stream_id ?? null;
    const { rows } = await ctx.db.query<BadStream>(sql.badStreamsInRange, [from, end]);
    await onChunk(rows, end === null ? (await ctx.db.query<{ n: number }>(sql.chunkSize, [from, end])).rows[0]!.n : STREAMS_PER_CHUNK);
    if (end === null) return;
    from = end;
  }
}

/**
 * The log: per stream, versions 1..n with no gap and no repeat, n the stream's version, and every
 * event in its stream; the immutability triggers present and firing always.
 */
export const logCheck: AuditCheck = {
  name: 'log',
  summary: 'per stream, versions 1..n without gap or repeat; every event in its stream; the immutability triggers present and enabled',
  async run(ctx) {
    const sql = logSql(ctx.s);
    const triggers = await triggerFindings(ctx, sql);
    const findings = [...triggers.findings];
    let examined = 0;
    const collect = async (rows: BadStream[]) => {
      for (const row of rows) findings.push(await streamFinding(ctx.db, sql, row));
    };
    if (ctx.scope.full || triggers.altered || triggers.findings.length > 0) {
      await fullScan(ctx, sql, async (rows, streams) => {
        await collect(rows);
        ctx.progress((examined += streams));
      });
    } else {
      const touched = (await ctx.db.query<{ stream_id: string }>(sql.touchedStreams, [ctx.scope.fromTxOrder, ctx.scope.frontier])).rows.map((r) => r.stream_id);
      for (const chunk of slices([...new Set([...touched, ...rememberedSubjects(ctx.memory)])], STREAMS_PER_CHUNK)) {
        await collect((await ctx.db.query<BadStream>(sql.badStreamsOf, [chunk])).rows);
        ctx.progress((examined += chunk.length));
      }
    }
    const found = findings.filter((f) => f.subject.type === 'stream').map((f) => f.subject.id).slice(0, 10_000);
    return { findings, examined, memory: { triggers: triggers.versions, found } };
  },
};
