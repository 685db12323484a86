import { RunInProgressError } from '../../errors.js';
import type { RunnerSession } from '../runner-session.js';
import type { ProcessingSql } from '../sql.js';

/**
 * Run ids claimed in this process, per database. On PGlite every runner shares one session, where
 * advisory locks are re-entrant: only this tells two runs of one process apart.
 */
const claimedInProcess = new WeakMap<object, Set<string>>();

/** The advisory lock name of a replay run's claim, one per schema. */
export function runClaimName(schema: string, runId: string): string {
  return `rastro.run:${schema}:${runId}`;
}

/**
 * Claims a replay run for this runner: a session lock on the runner's own connection, so the
 * claim ends the moment the process dies, with no timeout to wait out. A second process on the
 * same run id would share its checkpoint while both replay the whole range, and could move it
 * past an event whose effect the other one reserved and then abandoned. It is refused with
 * {@link RunInProgressError} instead. Resolves to the function that gives the claim up.
 */
export async function claimRun(runner: RunnerSession, sql: ProcessingSql, schema: string, runId: string): Promise<() => Promise<void>> {
  const name = runClaimName(schema, runId);
  let claimed = claimedInProcess.get(runner.db);
  if (!claimed) claimedInProcess.set(runner.db, (claimed = new Set()));
  if (claimed.has(name)) throw new RunInProgressError(runId);
  claimed.add(name);
  try {
    const { rows } = await runner.session.query<{ locked: boolean }>(sql.tryLockPartition, [name, 0]);
    if (!rows[0]?.locked) throw new RunInProgressError(runId);
  } catch (err) {
    claimed.delete(name);
    throw err;
  }
  const session = runner.session;
  return async () => {
    claimed.delete(name);
    // A pg session's locks end with it; PGlite's one session lives on and must let go.
    await session.query(sql.unlockPartition, [name, 0]).catch(() => undefined);
  };
}
