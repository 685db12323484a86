import type { Queryable } from '../../db/database.js';
import { liveBacklog } from '../../processing/live-backlog.js';
import { runnerIsGone } from '../../processing/sql.js';
import { checkpointKey, checkpointMap, describeMoves, movedBack, movedBackByRun, samePlace, type CheckpointMap, type CheckpointRow } from '../checkpoint-memory.js';
import { inSnapshot, type AuditCheck, type CheckContext, type Finding } from '../finding.js';

/** Live runs keep this many partitions unless their run row says otherwise (runLive's default). */
const DEFAULT_LIVE_PARTITIONS = 8;

function processorsSql(s: string) {
  return {
    runs: `select run_id, processor, mode, status, coalesce(partitions, ${DEFAULT_LIVE_PARTITIONS})::int as partitions
      from ${s}.processor_runs where mode in ('live', 'replay') order by run_id`,
    checkpoints: `select c.run_id, c.partition, c.tx_order, c.position from ${s}.processor_checkpoints c
      join ${s}.processor_runs r on r.run_id = c.run_id where r.mode in ('live', 'replay')`,
    head: `select tx_order, position from ${s}.events order by tx_order desc, position desc limit 1`,
    /**
     * Per partition of live run $1 ($2 partitions), the first event of its types ($4) after its
     * checkpoint and below the frontier ($3): the one it should handle next.
     */
    firstWaiting: `select p.partition, w.tx_order, w.position
      from generate_series(0, $2 - 1) as p(partition)
      left join ${s}.processor_checkpoints c on c.run_id = $1 and c.partition = p.partition
      cross join lateral (select e.tx_order, e.position from ${s}.events e
        where (e.tx_order, e.position) > (coalesce(c.tx_order, 0), coalesce(c.position, 0)) and e.tx_order < $3
          and e.type = any($4::text[]) and mod(hashtext(e.stream_id)::bigint + 2147483648, $2) = p.partition
        order by e.tx_order, e.position limit 1) w`,
    /** Live runners of processor $1 whose liveness lock is held. */
    liveRunners: `select count(*)::int as n from ${s}.processor_runners r where r.processor = $1 and not ${runnerIsGone('r.runner_token')}`,
    /** Events a processor could not handle, oldest first, with how many of their stream wait behind them. */
    parked: `select p.run_id, p.processor, p.event_id, p.stream_id, p.error, extract(epoch from now() - p.parked_at)::float8 as age,
        (select count(*) from ${s}.parked_events w where w.run_id = p.run_id and w.stream_id = p.stream_id and w.reason = 'waiting')::int as waiting
      from ${s}.parked_events p join ${s}.processor_runs r on r.run_id = p.run_id and r.mode in ('live', 'replay')
      where p.reason = 'failed' order by p.parked_at limit $1`,
  } as const;
}

type Sql = ReturnType<typeof processorsSql>;

interface RunRow {
  run_id: string;
  processor: string;
  mode: 'live' | 'replay';
  status: 'running' | 'completed';
  partitions: number;
}

/** Parked events listed per audit; the count beyond shows in the last one's detail. */
const PARKED_LIMIT = 1000;

const place = (p: [number, number]) => `(${p[0]}, ${p[1]})`;

export interface ProcessorsCheckOptions {
  /** The event types a processor handles, when this process has loaded it (null: unknown, no silent-stop check). */
  typesOf?: (processor: string) => string[] | null;
}

/** Checkpoints past the log's head, and those that went back since the last audit. */
function checkpointFindings(ctx: CheckContext, runs: RunRow[], rows: CheckpointRow[], head: [number, number]): Finding[] {
  const findings: Finding[] = [];
  for (const row of rows) {
    const cp: [number, number] = [Number(row.tx_order), Number(row.position)];
    if (cp[0] > head[0] || (cp[0] === head[0] && cp[1] > head[1])) {
      findings.push({ check: 'processors', kind: 'checkpoint-past-head', subject: { type: 'run', id: row.run_id },
        detail: `partition ${row.partition} is checkpointed at ${place(cp)}, past the log's last event ${place(head)}: events appended later may be skipped`,
        action: 'restore the checkpoint from a backup, or replay the run from its last true position' });
    }
  }
  for (const [runId, moves] of movedBackByRun(movedBack(ctx.memory.checkpoints, checkpointMap(rows), new Set(runs.map((r) => r.run_id))))) {
    findings.push({ check: 'processors', kind: 'checkpoint-moved-back', subject: { type: 'run', id: runId },
      detail: `went back since the last audit: ${describeMoves(moves)}; its events are handled again (effects are not repeated, the ledger holds them)`,
      action: 'find what rewrote the checkpoint (a restore, a hand edit); the run catches up by itself' });
  }
  return findings;
}

/** Live runs whose checkpoint stood still since the last audit while an event waited for it. */
async function silentStops(ctx: CheckContext, sql: Sql, runs: RunRow[], now: CheckpointMap, options: ProcessorsCheckOptions) {
  const findings: Finding[] = [];
  const waiting: CheckpointMap = {};
  const seenCheckpoints = (ctx.memory.checkpoints ?? {}) as CheckpointMap;
  const seenWaiting = (ctx.memory.waiting ?? {}) as CheckpointMap;
  const backlog = liveBacklog(ctx.db, ctx.schema);
  for (const run of runs.filter((r) => r.mode === 'live' && r.status === 'running')) {
    const types = options.typesOf?.(run.processor) ?? null;
    if (!types) continue;
    const { rows } = await ctx.db.query<{ partition: number; tx_order: number; position: number }>(sql.firstWaiting, [run.run_id, run.partitions, ctx.scope.frontier, types]);
    const stopped: number[] = [];
    for (const row of rows) {
      const key = checkpointKey(run.run_id, Number(row.partition));
      waiting[key] = [Number(row.tx_order), Number(row.position)];
      if (seenWaiting[key] && samePlace(seenCheckpoints[key] ?? [0, 0], now[key] ?? [0, 0])) stopped.push(Number(row.partition));
    }
    if (stopped.length === 0) continue;
    const lag = await backlog.of(run.run_id, types, run.partitions);
    const alive = (await ctx.db.query<{ n: number }>(sql.liveRunners, [run.processor])).rows[0]?.n ?? 0;
    findings.push({ check: 'processors', kind: 'silent-stop', subject: { type: 'run', id: run.run_id },
      detail: `partitions ${stopped.join(', ')} have not moved since the last audit while events waited: ${lag.events} events behind, the oldest ${Math.round((lag.oldestMs ?? 0) / 1000)} s old; ${alive === 0 ? 'no runner is alive' : `${alive} runner(s) alive but not advancing`}`,
      action: alive === 0 ? `start the live runner (rastro live ${run.processor}, or serve with its processors)` : 'look at the runner\'s log for a failing batch or a stuck call; restart it',
      ageSeconds: lag.oldestMs === null ? undefined : lag.oldestMs / 1000 });
  }
  return { findings, waiting };
}

async function parkedFindings(q: Queryable, sql: Sql): Promise<Finding[]> {
  const { rows } = await q.query<{ run_id: string; event_id: string; stream_id: string; error: string | null; age: number; waiting: number }>(sql.parked, [PARKED_LIMIT]);
  return rows.map((row) => ({
    check: 'processors', kind: 'parked', subject: { type: 'event', id: row.event_id },
    detail: `run ${row.run_id} parked it (stream ${row.stream_id}${row.waiting > 0 ? `, ${row.waiting} events waiting behind it` : ''}): ${(row.error ?? 'no error recorded').slice(0, 300)}`,
    action: `fix the handler, then rastro parked retry ${row.event_id} (or rastro parked skip ${row.event_id})`,
    ageSeconds: Number(row.age),
  }));
}

/**
 * Processors: no checkpoint past the log's head, none gone back since the last audit, no live
 * run standing still while events wait for it, and the events parked, with their age.
 */
export function processorsCheck(options: ProcessorsCheckOptions = {}): AuditCheck {
  return {
    name: 'processors',
    summary: 'no checkpoint past the head or moved back; no live run standing still while events wait; parked events',
    async run(ctx) {
      const sql = processorsSql(ctx.s);
      // One snapshot: a checkpoint it shows only names events committed before it.
      const { runs, checkpoints, head } = await inSnapshot(ctx, async (tx) => ({
        runs: (await tx.query<RunRow>(sql.runs)).rows,
        checkpoints: (await tx.query<CheckpointRow>(sql.checkpoints)).rows,
        head: (await tx.query<{ tx_order: number; position: number }>(sql.head)).rows[0],
      }));
      const now = checkpointMap(checkpoints);
      const findings = checkpointFindings(ctx, runs, checkpoints, [Number(head?.tx_order ?? 0), Number(head?.position ?? 0)]);
      const stops = await silentStops(ctx, sql, runs, now, options);
      findings.push(...stops.findings, ...(await parkedFindings(ctx.db, sql)));
      ctx.progress(checkpoints.length);
      return { findings, examined: checkpoints.length, memory: { checkpoints: now, waiting: stops.waiting } };
    },
  };
}
