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
 * the session is closed and the error thrown.
 */
export async function startLeasedLoop(runner: RunnerSession, leases: PartitionLeases, options: Omit<TailLoopOptions, 'cleanup'>): Promise<LeasedLoop> {
  try {
    await leases.rebalance(true);
  } catch (err) {
    await runner.close();
    throw err;
  }
  const loop = startTailLoop({
    ...options,
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
