import { AsyncLocalStorage } from 'node:async_hooks';
import { PGlite } from '@electric-sql/pglite';
import { assertChannelName, IN_TRANSACTION, runAfterCommit, type Database, type QueryResult, type Transaction } from './database.js';
import { toDatabaseError } from './database-error.js';
import { lockDataDir } from './data-dir-lock.js';

async function run<Row>(target: Pick<PGlite, 'query'>, text: string, values?: readonly unknown[]): Promise<QueryResult<Row>> {
  try {
    const result = await target.query<Row>(text, values as unknown[] | undefined);
    return { rows: result.rows, rowCount: result.affectedRows ?? result.rows.length };
  } catch (err) {
    throw toDatabaseError(err);
  }
}

/**
 * PGlite has one connection: a statement sent outside a transaction from inside that
 * transaction's callback would wait for it forever. This marks the callback's async context so
 * such a call fails at once, naming the mistake.
 */
const insideTransaction = new AsyncLocalStorage<boolean>();

function refuseNestedUse(): void {
  if (insideTransaction.getStore()) {
    throw new Error('a statement was sent on the database from inside one of its transactions; send it on the transaction (tx) instead');
  }
}

/**
 * A {@link Database} on embedded PGlite. `dataDir` is a folder to persist to, or `memory://`.
 * PGlite has one connection: transactions and queries take turns. A folder is open in one
 * process at a time (see {@link lockDataDir}).
 */
export async function openPglite(dataDir: string): Promise<Database> {
  // memory:// (and any other scheme) lives in this process only: nothing to share.
  const unlock = /^\w+:\/\//.test(dataDir) ? () => undefined : lockDataDir(dataDir);
  const pglite = await PGlite.create(dataDir).catch((err: unknown) => {
    unlock();
    throw toDatabaseError(err);
  });
  return {
    kind: 'pglite',
    [IN_TRANSACTION]: () => false,
    query: async (text, values) => {
      refuseNestedUse();
      return run(pglite, text, values);
    },
    async transaction(fn) {
      refuseNestedUse();
      // What the callback throws reaches the caller as it is, as on PostgreSQL (its statements'
      // errors are converted already); only PGlite's own (begin, commit) are converted here.
      let thrown: { err: unknown } | undefined;
      const committed: (() => void)[] = [];
      try {
        const result = await pglite.transaction((tx) =>
          insideTransaction.run(true, async () => {
            try {
              return await fn({
                query: (text, values) => run(tx, text, values),
                exec: async (script) => {
                  await tx.exec(script).catch((err: unknown) => {
                    throw toDatabaseError(err);
                  });
                },
                afterCommit: (callback) => void committed.push(callback),
              } satisfies Transaction);
            } catch (err) {
              thrown = { err };
              throw err;
            }
          }),
        );
        runAfterCommit(committed);
        return result;
      } catch (err) {
        if (thrown && err === thrown.err) throw err;
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
    async connect() {
      return {
        query: async (text, values) => {
          refuseNestedUse();
          return run(pglite, text, values);
        },
        release: async () => undefined,
      };
    },
    async close() {
      try {
        if (!pglite.closed) await pglite.close();
      } finally {
        unlock();
      }
    },
  };
}
