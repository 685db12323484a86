/** A run's checkpoint in one partition, as the audit reads and remembers it. */
export interface CheckpointRow {
  run_id: string;
  partition: number;
  tx_order: number | string;
  position: number | string;
}

/** Checkpoints by `<run id>|<partition>`, as [tx_order, position]: what an audit remembers. */
export type CheckpointMap = Record<string, [number, number]>;

export const checkpointKey = (runId: string, partition: number) => `${runId}|${partition}`;

/** The checkpoints as the audit remembers them. */
export function checkpointMap(rows: readonly CheckpointRow[]): CheckpointMap {
  return Object.fromEntries(rows.map((row) => [checkpointKey(row.run_id, Number(row.partition)), [Number(row.tx_order), Number(row.position)]]));
}

/** A checkpoint now behind where the last audit saw it (or gone: back to the start). */
export interface MovedBack {
  runId: string;
  partition: number;
  was: [number, number];
  now: [number, number];
}

const before = (a: [number, number], b: [number, number]) => a[0] < b[0] || (a[0] === b[0] && a[1] < b[1]);

/**
 * The checkpoints that went backwards since the last audit. Checkpoints only move forward
 * (`saveProgress` refuses a move back), so any move back is damage: a restore, a hand edit.
 * Checkpoints of runs that no longer exist are not reported (a run deleted on purpose).
 */
export function movedBack(previous: unknown, now: CheckpointMap, liveRuns: ReadonlySet<string>): MovedBack[] {
  if (typeof previous !== 'object' || previous === null) return [];
  const moved: MovedBack[] = [];
  for (const [key, was] of Object.entries(previous as CheckpointMap)) {
    const bar = key.lastIndexOf('|');
    const runId = key.slice(0, bar);
    if (!liveRuns.has(runId) || !Array.isArray(was)) continue;
    const current = now[key] ?? [0, 0];
    if (before(current, was)) moved.push({ runId, partition: Number(key.slice(bar + 1)), was, now: current });
  }
  return moved;
}

/** Whether `a` is the same place as `b`. */
export const samePlace = (a: [number, number] | undefined, b: [number, number] | undefined) => !!a && !!b && a[0] === b[0] && a[1] === b[1];

/** Moves back grouped by run: one finding per run, naming its partitions. */
export function movedBackByRun(moves: MovedBack[]): Map<string, MovedBack[]> {
  const byRun = new Map<string, MovedBack[]>();
  for (const move of moves) (byRun.get(move.runId) ?? byRun.set(move.runId, []).get(move.runId)!).push(move);
  return byRun;
}

/** `partition 0 from (5, 10) to (0, 0)`, for each move. */
export const describeMoves = (moves: MovedBack[]) => moves.map((m) => `partition ${m.partition} from (${m.was.join(', ')}) to (${m.now.join(', ')})`).join('; ');
