import type { Database } from '../../db/database.js';
import { WakeUp } from '../../store/wake-up.js';

/** The first wait for work held back by an open transaction, and the longest (doubling between). */
const HELD_FIRST_MS = 2;
const HELD_MAX_MS = 100;

export interface TailLoopOptions {
  db: Database;
  /** NOTIFY channels that wake the loop. */
  channels: string[];
  /** Whether a notification on `channels` (its payload) is one to wake for. @defaultValue every one */
  wakesFor?: (payload: string) => boolean;
  /**
   * NOTIFY channels that end only a wait for held-back work (or tell a step running that its
   * work may have been released): a transaction that may have held it committed.
   */
  releaseChannels?: string[];
  /** The polling backstop: the longest wait when no notification arrives. */
  pollIntervalMs: number;
  /** The wait after a failed step, doubled on each failure in a row up to `maxBackoffMs`. */
  backoffMs: number;
  maxBackoffMs: number;
  /**
   * One unit of work; resolves true when there may be more to do at once, `'held'` when work
   * waits behind a transaction still open (tried again after a short wait that grows while it
   * lasts, rather than at the next notification or poll, or at once when a release channel
   * says a transaction that held it committed).
   */
  step(): Promise<boolean | 'held'>;
  /** Chores run between steps at most every `intervalMs` (the first one at the start). */
  chores?: { intervalMs: number; run(): Promise<void> }[];
  onError?: (err: unknown) => void;
  /** Runs once when the loop ends. */
  cleanup(): Promise<void>;
}

export interface TailLoop {
  stop(): Promise<void>;
  readonly done: Promise<void>;
}

/**
 * The loop every tailing runner shares (live processors, relays): wakes on NOTIFY, polls as a
 * backstop, and backs off exponentially while steps fail, so an outage of the database or a
 * broker is waited out and the runner resumes from its checkpoints on its own.
 */
export function startTailLoop(options: TailLoopOptions): TailLoop {
  const wakeUp = new WakeUp();

  async function runChores(lastRun: number[]): Promise<void> {
    for (const [i, chore] of (options.chores ?? []).entries()) {
      if (Date.now() - lastRun[i]! < chore.intervalMs) continue;
      lastRun[i] = Date.now();
      await chore.run();
    }
  }

  async function loop(): Promise<void> {
    const unlisten: (() => Promise<void>)[] = [];
    const lastRun = (options.chores ?? []).map(() => 0);
    let failures = 0;
    let heldMs = 0;
    // Sleeping the polling backstop: nothing is held back, so a release is no reason to read.
    let idle = false;
    const released = () => {
      if (!idle) wakeUp.signal();
    };
    try {
      const { wakesFor } = options;
      const notified = wakesFor ? (payload: string) => void (wakesFor(payload) && wakeUp.signal()) : wakeUp.signal;
      for (const channel of options.channels) unlisten.push(await options.db.listen(channel, notified));
      for (const channel of options.releaseChannels ?? []) unlisten.push(await options.db.listen(channel, released));
      while (!wakeUp.isStopped) {
        try {
          wakeUp.reset();
          await runChores(lastRun);
          const more = await options.step();
          failures = 0;
          heldMs = more === 'held' ? Math.min(HELD_MAX_MS, options.pollIntervalMs, Math.max(HELD_FIRST_MS, heldMs * 2)) : 0;
          if (more === 'held') await wakeUp.sleep(heldMs);
          else if (!more) {
            idle = true;
            await wakeUp.sleep(options.pollIntervalMs);
            idle = false;
          }
        } catch (err) {
          options.onError?.(err);
          failures++;
          await wakeUp.sleep(Math.min(options.maxBackoffMs, options.backoffMs * 2 ** (failures - 1)), { backoff: true });
        }
      }
    } finally {
      for (const stop of unlisten) await stop().catch(() => undefined);
      await options.cleanup();
    }
  }

  const done = loop();
  return {
    async stop() {
      wakeUp.stop();
      await done;
    },
    done,
  };
}
