import { quoteSchema } from '../db/schema-name.js';
import type { EventStore } from '../store/event-store.js';
import { liveBacklog } from './live-backlog.js';
import { processingSql } from './sql.js';

/**
 * A run's status, from its liveness: `running` while a runner of it holds its session lock,
 * `completed` (a replay that handled its whole range), `stopped` (its last runner ended it), or
 * `dead` (its runners are gone without stopping: killed, or their connection lost).
 */
export type RunLiveness = 'running' | 'completed' | 'stopped' | 'dead';

/** A partition of a replay: how far its checkpoint got, and the runner holding it now. */
export interface PartitionStatus {
  partition: number;
  /** The log position its checkpoint reached; null before its first batch. */
  position: number | null;
  updatedAt: Date | null;
  /** The runner holding it: its database backend's pid, runner token and application name; null when none does. */
  holder: { pid: number; runner: number | null; client: string | null } | null;
}

/** A live or replay run: what it covers, how far it got, its counters and how far behind it is. */
export interface RunStatus {
  runId: string;
  processor: string;
  mode: 'live' | 'replay';
  simulate: boolean;
  status: RunLiveness;
  /** When it completed, stopped, or died (its last sign of life); null while running. */
  since: Date | null;
  /** The last time a runner of it was seen alive. */
  lastSeenAt: Date | null;
  startedAt: Date;
  updatedAt: Date;
  window: { from: Date | null; to: Date | null; fromPosition: number | null; toPosition: number | null };
  /** Events in a replay's range (null for a live run). */
  total: number | null;
  /** Events the run handled. */
  done: number;
  /** done / total for a replay, 1 when completed; null for a live run. */
  progress: number | null;
  counters: Record<string, number>;
  /** Events not handled yet, and the age of the oldest in seconds (live runs; null for a replay). */
  lag: { events: number; seconds: number | null };
  /** A replay's partitions: each one's checkpoint and holder (absent for a live run). */
  partitions?: PartitionStatus[];
}

interface PartitionRow {
  run_id: string;
  partition: number;
  position: number | null;
  updated_at: Date | null;
  pid: number | null;
  token: number | null;
  client: string | null;
}

interface RunRow {
  run_id: string;
  processor: string;
  mode: 'live' | 'replay';
  simulate: boolean;
  window_from: Date | null;
  window_to: Date | null;
  from_position: number | null;
  to_position: number | null;
  total_events: number | null;
  status: 'running' | 'completed';
  started_at: Date;
  updated_at: Date;
  partitions: number | null;
  heartbeat_at: Date | null;
  stopped_at: Date | null;
  alive: boolean;
}

/** The status of a run row and since when, from its liveness (see {@link RunLiveness}). */
export function livenessOf(row: { status: string; alive: boolean; updated_at: Date; heartbeat_at: Date | null; stopped_at: Date | null }): { status: RunLiveness; since: Date | null } {
  if (row.status === 'completed') return { status: 'completed', since: row.updated_at };
  if (row.alive) return { status: 'running', since: null };
  // The last runner to go decides: it stopped cleanly after every other sign of life, or not.
  if (row.stopped_at && (!row.heartbeat_at || row.stopped_at >= row.heartbeat_at)) return { status: 'stopped', since: row.stopped_at };
  return { status: 'dead', since: row.heartbeat_at ?? row.updated_at };
}

const DEFAULT_LIVE_PARTITIONS = 8;
const nullableNumber = (value: number | null) => (value === null ? null : Number(value));

/**
 * Reads runs for the operations API and the figures. `typesOf` gives the event types a
 * processor handles (null when this process does not know it: every type counts).
 *
 * @example
 * ```ts
 * const runs = runStatus(store)
 * for (const run of await runs.list({ mode: 'replay' })) console.log(run.runId, run.progress)
 * ```
 */
export function runStatus(store: EventStore<any>, options: { typesOf?: (processor: string) => string[] | null } = {}) {
  const sql = processingSql(quoteSchema(store.schema));
  const db = store.db;
  const backlog = liveBacklog(db, store.schema);
  const typesOf = options.typesOf ?? (() => null);

  async function describe(rows: RunRow[]): Promise<RunStatus[]> {
    if (rows.length === 0) return [];
    const { rows: counterRows } = await db.query<{ run_id: string; name: string; value: number }>(sql.countersOfRuns, [rows.map((row) => row.run_id)]);
    const countersOf = new Map<string, Record<string, number>>();
    for (const row of counterRows) (countersOf.get(row.run_id) ?? countersOf.set(row.run_id, {}).get(row.run_id)!)[row.name] = Number(row.value);
    const end = await backlog.last();
    const replays = rows.filter((row) => row.mode === 'replay').map((row) => row.run_id);
    const partitionsOf = new Map<string, PartitionStatus[]>();
    if (replays.length > 0) {
      const { rows: parts } = await db.query<PartitionRow>(sql.replayPartitions, [replays, store.schema]);
      for (const part of parts) {
        const list = partitionsOf.get(part.run_id) ?? partitionsOf.set(part.run_id, []).get(part.run_id)!;
        list.push({
          partition: part.partition, position: nullableNumber(part.position), updatedAt: part.updated_at,
          holder: part.pid === null ? null : { pid: part.pid, runner: nullableNumber(part.token), client: part.client },
        });
      }
    }
    return Promise.all(rows.map(async (row): Promise<RunStatus> => {
      const counters = countersOf.get(row.run_id) ?? {};
      const done = counters.events ?? 0;
      const total = nullableNumber(row.total_events);
      const base = {
        runId: row.run_id, processor: row.processor, mode: row.mode, simulate: row.simulate, ...livenessOf(row), lastSeenAt: row.heartbeat_at,
        startedAt: row.started_at, updatedAt: row.updated_at,
        window: { from: row.window_from, to: row.window_to, fromPosition: nullableNumber(row.from_position), toPosition: nullableNumber(row.to_position) },
        counters, done,
      };
      if (row.mode === 'live') {
        const lag = await backlog.of(row.run_id, typesOf(row.processor), row.partitions ?? DEFAULT_LIVE_PARTITIONS, end);
        return { ...base, total: null, progress: null, lag: { events: lag.events, seconds: lag.oldestMs === null ? null : lag.oldestMs / 1000 } };
      }
      const completed = base.status === 'completed';
      const progress = completed ? 1 : total ? Math.min(done / total, 1) : 0;
      return { ...base, total, progress, lag: { events: completed ? 0 : Math.max((total ?? 0) - done, 0), seconds: null }, partitions: partitionsOf.get(row.run_id) ?? [] };
    }));
  }

  return {
    /** Runs newest first; `mode` picks live or replay runs (both by default). */
    async list(filter: { mode?: 'live' | 'replay'; limit?: number } = {}): Promise<RunStatus[]> {
      const { rows } = await db.query<RunRow>(sql.listRuns, [filter.mode ?? null, filter.limit ?? 100]);
      return describe(rows);
    },
    /** One live or replay run, or undefined (relays are not runs of a processor). */
    async get(runId: string): Promise<RunStatus | undefined> {
      const { rows } = await db.query<RunRow & { mode: string }>(sql.getRun, [runId]);
      const row = rows[0];
      if (!row || (row.mode !== 'live' && row.mode !== 'replay')) return undefined;
      return (await describe([row]))[0];
    },
  };
}

export type RunStatusReader = ReturnType<typeof runStatus>;
