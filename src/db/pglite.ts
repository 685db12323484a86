import { PGlite } from '@electric-sql/pglite';
import { assertChannelName, type Database, type QueryResult, type Transaction } from './database.js';
import { toDatabaseError } from './database-error.js';

async function run<Row>(target: Pick<PGlite, 'query'>, text: string, values?: readonly unknown[]): Promise<QueryResult<Row>> {
  try {
    const result = await target.query<Row>(text, values as unknown[] | undefined);
    return { rows: result.rows, rowCount: result.affectedRows ?? result.rows.length };
  } catch (err) {
    throw toDatabaseError(err);
  }
}

/**
 * A {@link Database} on embedded PGlite. `dataDir` is a folder to persist to, or `memory://`.
 * PGlite has one connection: transactions and queries take turns.
 */
export async function openPglite(dataDir: string): Promise<Database> {
  const pglite = await PGlite.create(dataDir).catch((err: unknown) => {
    throw toDatabaseError(err);
  });
  return {
    kind: 'pglite',
    query: (text, values) => run(pglite, text, values),
    async transaction(fn) {
      try {
        return await pglite.transaction((tx) =>
          fn({
            query: (text, values) => run(tx, text, values),
            exec: async (script) => {
              await tx.exec(script).catch((err: unknown) => {
                throw toDatabaseError(err);
              });
            },
          } satisfies Transaction),
        );
      } catch (err) {
        throw toDatabaseError(err);
      }
    },
    async listen(channel, fn) {
      assertChannelName(channel);
      const unlisten = await pglite.listen(channel, fn);
      return async () => {
        if (!pglite.closed) await unlisten();
      };
    },
    async close() {
      if (!pglite.closed) await pglite.close();
    },
  };
}
