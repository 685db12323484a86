import { isDeepStrictEqual } from 'node:util';
import type { Queryable } from '../db/database.js';
import { guardAllows, type GuardValues } from './guards.js';
import type { Counters, RunContext } from './run-context.js';

/** A state write a handler asked for. `order` is its place in the batch: event order, then call order. */
export interface StateWrite {
  order: number;
  eventId: string;
  projection: string;
  key: string;
  doc: Record<string, unknown>;
  guard: GuardValues;
}

export interface ProbeRequest {
  write: StateWrite;
  settle: (applied: boolean) => void;
}

interface StoredRow extends GuardValues {
  doc: unknown;
}

const rowKey = (projection: string, key: string) => `${projection}\u0000${key}`;

/**
 * Tracks a batch's writes against the stored rows, so each `ctx.upsert` learns whether it
 * applies without a round trip per write, and simulate can record before/after diffs.
 */
export class StateBuffer {
  private readonly stored = new Map<string, StoredRow | null>();
  private readonly latest = new Map<string, GuardValues>();
  private readonly diffs = new Map<string, { projection: string; key: string; before: unknown; after: unknown }>();

  constructor(private readonly run: RunContext) {}

  /** Loads the stored rows the requests touch (one query) and settles each request in batch order. */
  async probe(target: Queryable, requests: ProbeRequest[]): Promise<void> {
    const missing = [...new Map(requests.map(({ write }) => [rowKey(write.projection, write.key), write])).values()].filter(
      (write) => !this.stored.has(rowKey(write.projection, write.key)),
    );
    if (missing.length > 0) {
      const { rows } = await target.query<{ projection: string; key: string; doc: unknown; version: number | null; observed_at: Date | null }>(this.run.sql.probe, [
        missing.map((write) => write.projection),
        missing.map((write) => write.key),
      ]);
      for (const write of missing) this.stored.set(rowKey(write.projection, write.key), null);
      for (const row of rows) this.stored.set(rowKey(row.projection, row.key), { doc: row.doc, version: row.version, observedAt: row.observed_at });
    }
    for (const { write, settle } of [...requests].sort((a, b) => a.write.order - b.write.order)) settle(this.consider(write));
  }

  private consider(write: StateWrite): boolean {
    const id = rowKey(write.projection, write.key);
    const stored = this.stored.get(id) ?? undefined;
    const applies = guardAllows(this.latest.get(id) ?? stored, write.guard);
    if (applies) this.latest.set(id, write.guard);
    // Simulate: a key whose stored row is newer than the event, or that would not change, is not a difference.
    if (this.run.simulate && guardAllows(stored, write.guard) && !isDeepStrictEqual(stored?.doc, write.doc)) {
      this.diffs.set(id, { projection: write.projection, key: write.key, before: stored?.doc ?? null, after: write.doc });
    }
    return applies;
  }

  /** Writes the winning write per key (guarded again in SQL), or the diffs when simulating. */
  async commit(tx: Queryable, writes: StateWrite[], counters: Counters): Promise<void> {
    if (this.run.simulate) return this.commitDiffs(tx);
    if (writes.length === 0) return;
    const winners = new Map<string, StateWrite>();
    for (const write of [...writes].sort((a, b) => a.order - b.order)) {
      const id = rowKey(write.projection, write.key);
      const current = winners.get(id);
      if (!current || guardAllows(current.guard, write.guard)) winners.set(id, write);
    }
    // A write that would store what is already there (same guard, same document) is left out:
    // the upsert would still lock and rewrite the row. A replay of unchanged code hits this.
    let unchanged = 0;
    const chosen = [...winners.values()].filter((write) => {
      const stored = this.stored.get(rowKey(write.projection, write.key));
      const same = !!stored && stored.version === write.guard.version && stored.observedAt?.getTime() === write.guard.observedAt?.getTime() && isDeepStrictEqual(stored.doc, write.doc);
      if (same) unchanged++;
      return !same;
    });
    if (chosen.length === 0) {
      counters.add('written', unchanged);
      counters.add('ignored-newer-version', writes.length - unchanged);
      return;
    }
    const { rows } = await tx.query<{ projection: string; key: string }>(this.run.sql.upsert, [
      chosen.map((write) => write.projection),
      chosen.map((write) => write.key),
      chosen.map((write) => JSON.stringify(write.doc)),
      chosen.map((write) => write.guard.version),
      chosen.map((write) => write.guard.observedAt?.toISOString() ?? null),
      chosen.map((write) => write.eventId),
    ]);
    counters.add('written', rows.length + unchanged);
    counters.add('ignored-newer-version', writes.length - rows.length - unchanged);
  }

  private async commitDiffs(tx: Queryable): Promise<void> {
    const diffs = [...this.diffs.values()];
    if (diffs.length === 0) return;
    await tx.query(this.run.sql.saveDiffs, [
      this.run.runId,
      diffs.map((diff) => diff.projection),
      diffs.map((diff) => diff.key),
      diffs.map((diff) => JSON.stringify(diff.before)),
      diffs.map((diff) => JSON.stringify(diff.after)),
    ]);
  }
}
