import { quoteSchema } from '../db/schema-name.js';
import type { EventStore } from '../store/event-store.js';
import type { ParkedEvent } from './parking.js';
import { processingSql } from './sql.js';

/** One state key a simulated run would change. */
export interface DiffRow {
  runId: string;
  projection: string;
  key: string;
  before: unknown;
  after: unknown;
}

/** The diff a simulated run recorded, by projection and key. */
export async function runDiff(store: EventStore<any>, runId: string): Promise<DiffRow[]> {
  const sql = processingSql(quoteSchema(store.schema));
  const { rows } = await store.db.query<{ projection: string; key: string; before: unknown; after: unknown }>(sql.diffs, [runId]);
  return rows.map((row) => ({ runId, ...row }));
}

/** A page of a run's diff, with the totals of the whole run. */
export interface DiffPage {
  /** Rows matching the filter, over all pages. */
  matching: number;
  rows: DiffRow[];
  /** Per projection: keys the run would add (none before) and keys it would change. */
  totals: { projection: string; added: number; changed: number }[];
}

/**
 * One page of a run's diff, filtered by projection and by text in the key.
 *
 * @example
 * ```ts
 * const { matching, rows } = await runDiffPage(store, 'fix-10-14', { projection: 'commission', keyContains: 'order-4', limit: 50 })
 * ```
 */
export async function runDiffPage(
  store: EventStore<any>,
  runId: string,
  options: { projection?: string; keyContains?: string; limit?: number; offset?: number } = {},
): Promise<DiffPage> {
  const sql = processingSql(quoteSchema(store.schema));
  const [page, totals] = await Promise.all([
    store.db.query<{ projection: string; key: string; before: unknown; after: unknown; matching: number }>(sql.diffPage, [
      runId, options.projection ?? null, options.keyContains || null, options.limit ?? 100, options.offset ?? 0,
    ]),
    store.db.query<{ projection: string; added: number; changed: number }>(sql.diffTotals, [runId]),
  ]);
  let matching = Number(page.rows[0]?.matching ?? 0);
  // A page past the end has no row to carry the count: count again without the page.
  if (page.rows.length === 0 && (options.offset ?? 0) > 0) {
    const all = await store.db.query<{ matching: number }>(sql.diffPage, [runId, options.projection ?? null, options.keyContains || null, 1, 0]);
    matching = Number(all.rows[0]?.matching ?? 0);
  }
  return {
    matching,
    rows: page.rows.map(({ matching: _matching, ...row }) => ({ runId, ...row })),
    totals: totals.rows.map((row) => ({ projection: row.projection, added: Number(row.added), changed: Number(row.changed) })),
  };
}

/** An event a simulate run could not handle (failed), or one of its stream waiting behind it: a parked entry's fields, kept apart. */
export type SimulateFailure = Omit<ParkedEvent, 'parkedAt' | 'effects' | 'settled'> & { at: Date };

/**
 * What a simulate run could not handle: its own record beside its diff, never parked in the
 * operational queue (no retry, no figure, no alert counts it). `total` counts them all.
 *
 * @example
 * ```ts
 * const { total, failures } = await simulateFailures(store, 'double-tips')
 * ```
 */
export async function simulateFailures(store: EventStore<any>, runId: string, options: { limit?: number } = {}): Promise<{ total: number; failures: SimulateFailure[] }> {
  const sql = processingSql(quoteSchema(store.schema));
  const { rows } = await store.db.query<{ processor: string; run_id: string; event_id: string; stream_id: string; position: number; reason: 'failed' | 'waiting'; error: string | null; parked_at: Date; total: number }>(
    sql.simulateFailures, [runId, options.limit ?? 100],
  );
  return {
    total: Number(rows[0]?.total ?? 0),
    failures: rows.map((row) => ({
      processor: row.processor, runId: row.run_id, eventId: row.event_id, streamId: row.stream_id, position: Number(row.position), reason: row.reason, error: row.error, at: row.parked_at,
    })),
  };
}
