import type { Queryable } from '../db/database.js';
import type { Suspended } from './batch.js';
import { guardAfter, guardAllows, type GuardValues } from './guards.js';
import { parseJsonItems, type PreloadedRow } from './read-batch.js';
import type { Counters, RunContext } from './run-context.js';

/** A state write a handler asked for. `order` is its place in the batch: event order, then call order. */
export interface StateWrite {
  /** The row it writes, from {@link rowKey}. */
  id: string;
  order: number;
  eventId: string;
  eventPosition: number;
  projection: string;
  key: string;
  doc: Record<string, unknown>;
  guard: GuardValues;
  /** What the probe answered the handler: false when the stored row (or an earlier write) is newer. */
  applies?: boolean;
}

export interface ProbeRequest extends Suspended<boolean> {
  write: StateWrite;
}

/** A stored row as the probe answers it: [i, doc, version, observed_at in epoch microseconds]. */
type ProbedRow = [number, unknown, number | null, number | null];

interface StoredRow extends GuardValues {
  doc: unknown;
}

export const rowKey = (projection: string, key: string) => `${projection}\u0000${key}`;

const storedRow = (doc: unknown, version: number | null, observedUs: number | null): StoredRow => ({
  doc, version, observedAt: observedUs === null ? null : new Date(Math.floor(observedUs / 1000)),
});

const isPlainObject = (value: object) => {
  const prototype = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
};

/**
 * Whether `next` would be stored as `stored`, a document read back from the database. Plain JSON
 * data is compared by value; anything else (a Date, a class instance) counts as different, so
 * the worst a false "different" costs is one write of the same value.
 */
export function sameJson(stored: unknown, next: unknown): boolean {
  if (stored === next) return true;
  if (typeof stored !== 'object' || typeof next !== 'object' || stored === null || next === null) return false;
  if (Array.isArray(stored) || Array.isArray(next)) {
    if (!Array.isArray(stored) || !Array.isArray(next) || stored.length !== next.length) return false;
    for (let i = 0; i < stored.length; i++) if (!sameJson(stored[i], next[i])) return false;
    return true;
  }
  if (!isPlainObject(next)) return false;
  const a = stored as Record<string, unknown>;
  const b = next as Record<string, unknown>;
  let keys = 0;
  for (const key in b) {
    if (!Object.hasOwn(a, key) || !sameJson(a[key], b[key])) return false;
    keys++;
  }
  for (const key in a) if (Object.hasOwn(a, key)) keys--;
  return keys === 0;
}

/**
 * Tracks a batch's writes against the stored rows, so each `ctx.upsert` learns whether it
 * applies without a round trip per write, and simulate can record before/after diffs.
 */
export class StateBuffer {
  /** Rows read so far: null when the row does not exist. */
  private readonly stored = new Map<string, StoredRow | null>();
  private readonly latest = new Map<string, GuardValues>();
  private readonly diffs = new Map<string, { projection: string; key: string; before: unknown; after: unknown }>();
  /** The rows the commit writes (guarded: some may be found newer), once it is prepared. */
  written: Set<string> | undefined;
  /** The projections the handlers wrote to. */
  readonly projections = new Set<string>();

  constructor(private readonly run: RunContext) {}

  /**
   * Takes rows read with the batch's events as already probed, but for `stale` ones: rows that
   * batches committed since the read wrote, which it holds as they were.
   */
  preload(rows: readonly PreloadedRow[], stale: readonly ReadonlySet<string>[]): void {
    const isStale = (id: string) => {
      for (const written of stale) if (written.has(id)) return true;
      return false;
    };
    for (const [projection, key, doc, version, observedUs] of rows) {
      const id = rowKey(projection, key);
      if (!isStale(id)) this.stored.set(id, storedRow(doc, version, observedUs));
    }
  }

  /** Loads the stored rows the requests touch (one query) and settles each request in batch order. */
  async probe(target: Queryable, requests: ProbeRequest[]): Promise<void> {
    const missing: StateWrite[] = [];
    for (const { write } of requests) {
      if (this.stored.has(write.id)) continue;
      this.stored.set(write.id, null);
      missing.push(write);
    }
    if (missing.length > 0) {
      // Not prepared: a plan cached while the table was small (a new projection) would scan it
      // whole for every batch once it has grown; planned each time, it looks the keys up.
      const { rows } = await target.query<{ rows: string | null }>(this.run.sql.probe, [JSON.stringify(missing.map((write) => [write.projection, write.key]))]);
      for (const [i, doc, version, observedUs] of parseJsonItems<ProbedRow>(rows[0]?.rows ?? null)) this.stored.set(missing[i - 1]!.id, storedRow(doc, version, observedUs));
    }
    requests.sort((a, b) => a.write.order - b.write.order);
    for (const request of requests) request.resolve(this.consider(request.write));
  }

  private consider(write: StateWrite): boolean {
    this.projections.add(write.projection);
    const stored = this.stored.get(write.id) ?? undefined;
    const current = this.latest.get(write.id) ?? stored;
    const applies = guardAllows(current, write.guard);
    write.applies = applies;
    if (applies) this.latest.set(write.id, guardAfter(current, write.guard));
    // Simulate: a key whose stored row is newer than the event, or that would not change, is not a difference.
    if (this.run.simulate && guardAllows(stored, write.guard) && !(stored && sameJson(stored.doc, write.doc))) {
      this.diffs.set(write.id, { projection: write.projection, key: write.key, before: stored?.doc ?? null, after: write.doc });
    }
    return applies;
  }

  /**
   * Prepares writing the winning write per key (guarded again in SQL), or the diffs when
   * simulating; undefined when there is nothing to write. Counts what it can decide now.
   */
  prepareCommit(writes: StateWrite[], counters: Counters): ((tx: Queryable) => Promise<void>) | undefined {
    if (this.run.simulate) return this.diffs.size > 0 ? (tx) => this.commitDiffs(tx) : undefined;
    if (writes.length === 0) return undefined;
    // The winning write per key, with the guard it leaves: a recency write without a time keeps
    // the time of the write it replaced in the batch (the SQL keeps the stored one). `applied`
    // counts each key's writes the handler was told applied: each one counts as written when its
    // key's winner is stored, so the counters do not depend on where the batches fall (the same
    // events one per batch write each of those writes in turn).
    const winners = new Map<string, StateWrite>();
    const applied = new Map<string, number>();
    for (const write of writes.sort((a, b) => a.order - b.order)) {
      // A write the handler was told did not apply stays out: after a write without a time it
      // would win here (null applies), then lose in SQL to the stored row, and take that write with it.
      if (write.applies === false) continue;
      applied.set(write.id, (applied.get(write.id) ?? 0) + 1);
      const current = winners.get(write.id);
      if (!current) winners.set(write.id, write);
      else if (guardAllows(current.guard, write.guard)) winners.set(write.id, { ...write, guard: guardAfter(current.guard, write.guard) });
    }
    // A write that would store what is already there (same guard, same document) is left out:
    // the upsert would still lock and rewrite the row. A replay of unchanged code hits this.
    let unchanged = 0;
    const chosen: StateWrite[] = [];
    for (const write of winners.values()) {
      const stored = this.stored.get(write.id);
      const guard = stored ? guardAfter(stored, write.guard) : write.guard;
      const same = !!stored && stored.version === guard.version && stored.observedAt?.getTime() === guard.observedAt?.getTime() && sameJson(stored.doc, write.doc);
      if (same) unchanged += applied.get(write.id)!;
      else chosen.push(write);
    }
    const count = (written: number) => {
      counters.add('written', written);
      counters.add('ignored-newer-version', writes.length - written);
    };
    if (chosen.length === 0) {
      count(unchanged);
      return undefined;
    }
    this.written = new Set(chosen.map((write) => write.id));
    return async (tx) => {
      const { rows } = await tx.query<{ projection: string; key: string }>(this.run.sql.upsert, [
        chosen.map((write) => write.projection),
        chosen.map((write) => write.key),
        chosen.map((write) => JSON.stringify(write.doc)),
        chosen.map((write) => write.guard.version),
        chosen.map((write) => write.guard.observedAt?.toISOString() ?? null),
        chosen.map((write) => write.eventId),
        chosen.map((write) => write.eventPosition),
      ], { prepare: true });
      let written = unchanged;
      for (const row of rows) written += applied.get(rowKey(row.projection, row.key)) ?? 0;
      count(written);
    };
  }

  private async commitDiffs(tx: Queryable): Promise<void> {
    const diffs = [...this.diffs.values()];
    await tx.query(this.run.sql.saveDiffs, [
      this.run.runId,
      diffs.map((diff) => diff.projection),
      diffs.map((diff) => diff.key),
      diffs.map((diff) => JSON.stringify(diff.before)),
      diffs.map((diff) => JSON.stringify(diff.after)),
    ]);
  }
}
