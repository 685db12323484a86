import type { Database, Transaction } from '../../packages/rastro/src/db/database.js';

/** A promise and the function that resolves it. */
export function deferred() {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

/**
 * A transaction that runs `begin` and stays open until `close`, which runs `end` in it first and
 * commits. Resolves once `begin` ran.
 */
export async function openTransaction(db: Database, begin: (tx: Transaction) => Promise<unknown>) {
  const closing = deferred();
  let end: ((tx: Transaction) => Promise<unknown>) | undefined;
  const opened = deferred();
  const done = db.transaction(async (tx) => {
    await begin(tx);
    opened.resolve();
    await closing.promise;
    await end?.(tx);
  });
  await Promise.race([opened.promise, done]);
  return {
    async close(last?: (tx: Transaction) => Promise<unknown>) {
      end = last;
      closing.resolve();
      await done;
    },
  };
}
