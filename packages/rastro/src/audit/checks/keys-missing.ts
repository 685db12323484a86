import type { Database } from '../../db/database.js';

/** Keys asked about at once. */
const BATCH = 5_000;

/**
 * Reads `keys` (an async list from outside the database: a provider, the broker) in batches and
 * yields, per batch, the items whose key `missingSql` (one text[] parameter, returns `key`) says
 * the database lacks. Read-only; the batches keep each question one statement.
 */
export async function* missingKeys<T>(db: Database, items: AsyncIterable<T>, keyOf: (item: T) => string, missingSql: string): AsyncGenerator<{ missing: T[]; examined: number; batch: T[] }> {
  let batch: T[] = [];
  const flush = async () => {
    const { rows } = await db.query<{ key: string }>(missingSql, [batch.map(keyOf)]);
    const missing = new Set(rows.map((row) => row.key));
    const found = { missing: batch.filter((item) => missing.has(keyOf(item))), examined: batch.length, batch };
    batch = [];
    return found;
  };
  for await (const item of items) {
    batch.push(item);
    if (batch.length >= BATCH) yield await flush();
  }
  if (batch.length > 0) yield await flush();
}
