import type { RunnerSession } from '../runner-session.js';
import type { PartitionLeases } from './partition-leases.js';
import { startTailLoop, type TailLoopOptions } from './tail-loop.js';

/** A running runner that holds partitions: live processors and relays. */
export interface LeasedLoop {
  /** Partitions the runner holds now. */
  readonly partitions: readonly number[];
  /** Stops after the current step and releases its partitions. */
  stop(): Promise<void>;
  readonly done: Promise<void>;
}

/**
 * Takes the runner's first share of partitions, then runs the tailing loop; when the loop ends,
 * the partitions and the runner's session are released. If the first share cannot be taken,
 * the session is closed and the error thrown. After a failed step it checks the runner's
 * session: one whose connection was lost (a database outage) is renewed, and the partitions
 * taken again, once the database answers.
 */
export async function startLeasedLoop(runner: RunnerSession, leases: PartitionLeases, options: Omit<TailLoopOptions, 'cleanup'>): Promise<LeasedLoop> {
  try {
    await leases.rebalance(true);
  } catch (err) {
    await runner.close();
    throw err;
  }
  // After a failed step, the runner's session may be the connection that was lost; a session
  // known to be lost holds no partition any more, so nothing is processed before it is renewed.
  let checkSession = false;
  const loop = startTailLoop({
    ...options,
    async step() {
      if (checkSession || runner.lost) {
        if (await runner.renew()) {
          leases.forget();
          await leases.rebalance(true);
        }
        checkSession = false;
      }
      return options.step();
    },
    onError(err) {
      checkSession = true;
      options.onError?.(err);
    },
    async cleanup() {
      await leases.releaseAll();
      await runner.close();
    },
  });
  return {
    get partitions() {
      return [...leases.owned];
    },
    stop: () => loop.stop(),
    done: loop.done,
  };
}
