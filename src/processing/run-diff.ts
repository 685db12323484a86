import { quoteSchema } from '../db/schema-name.js';
import type { EventStore } from '../store/event-store.js';
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
export async function runDiff(store: EventStore, runId: string): Promise<DiffRow[]> {
  const sql = processingSql(quoteSchema(store.schema));
  const { rows } = await store.db.query<{ projection: string; key: string; before: unknown; after: unknown }>(sql.diffs, [runId]);
  return rows.map((row) => ({ runId, ...row }));
}
