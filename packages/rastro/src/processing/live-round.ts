import type { EventMap } from '../store/event-types.js';
import { liveBacklog } from './live-backlog.js';
import { runLive, type LiveOptions } from './live-runner.js';
import type { Processor } from './processor.js';
import { handledTypes } from './read-batch.js';

export interface LiveRoundOptions<Effect extends string = string> extends LiveOptions<Effect> {
  /** Called while the round runs with the events still to do. */
  onProgress?: (left: number) => void;
  /** How often the round checks what is left, in milliseconds. @defaultValue 25 */
  checkIntervalMs?: number;
}

/**
 * One round of a processor's live run: starts a live runner, lets it take every event committed
 * past the live checkpoints when the round began (waiting, like a replay, for those an older open
 * transaction still holds back from readers), and stops it. The checkpoints are the live run's own, so the next
 * round (or a runner that stays up) continues where this one ended. Resolves to what it did.
 *
 * @example
 * ```ts
 * const { events } = await runLiveRound(normalizer, { store, policy })
 * ```
 */
export async function runLiveRound<E extends EventMap, Effect extends string>(typed: Processor<E, Effect>, options: LiveRoundOptions<Effect>): Promise<{ events: number; counters: Record<string, number> }> {
  const processor = typed as unknown as Processor;
  const backlog = liveBacklog(options.store.db, options.store.schema);
  const runId = `live:${processor.name}`;
  const partitions = options.partitions ?? 8;
  const end = await backlog.last();
  const left = async () => (await backlog.of(runId, handledTypes(processor), partitions, end)).events;
  let failure: unknown;
  const runner = await runLive(typed, {
    ...options,
    onError: (err) => {
      failure ??= err;
      options.onError?.(err);
    },
  });
  try {
    for (let n = await left(); n > 0 && failure === undefined; n = await left()) {
      options.onProgress?.(n);
      await new Promise((resolve) => setTimeout(resolve, options.checkIntervalMs ?? 25));
    }
  } finally {
    await runner.stop();
  }
  if (failure !== undefined) throw failure;
  const counters = Object.fromEntries(runner.counters.entries());
  return { events: counters.events ?? 0, counters };
}
