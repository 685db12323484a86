import { quoteSchema } from '../db/schema-name.js';
import { ValidationError } from '../errors.js';
import type { EventStore } from '../store/event-store.js';
import type { EventMap } from '../store/event-types.js';
import { policyFor, type EffectPolicy } from './policy.js';
import type { Processor } from './processor.js';
import { processEvents } from './process-events.js';
import { NO_CHECKPOINT } from './progress.js';
import { handledTypes, readRunEvents } from './read-batch.js';
import { runCounters, type RunSummary } from './replay-runner.js';
import { openRunnerSession } from './runner-session.js';
import type { RunContext } from './run-context.js';
import { processingSql } from './sql.js';

export interface StreamReplayOptions<Effect extends string = string> {
  store: EventStore<any>;
  streamId: string;
  /** A new id for this run. */
  runId: string;
  policy: EffectPolicy<Effect>;
  /** @defaultValue 1000 */
  batchSize?: number;
}

/**
 * A replay of one stream: its events, in order, through the processor's handlers under the
 * same guards and effect ledger as every other run. It moves no checkpoint; the live run's
 * and other replays' are left as they are.
 *
 * @example
 * ```ts
 * await replayStream(normalizer, { store, streamId: 'order:pied:260065713', runId: 'renormalize-1', policy })
 * ```
 */
export async function replayStream<E extends EventMap, Effect extends string>(typed: Processor<E, Effect>, options: StreamReplayOptions<Effect>): Promise<RunSummary> {
  const processor = typed as unknown as Processor;
  const { store, streamId, runId } = options;
  const policy = policyFor(processor, options.policy);
  const db = store.db;
  const sql = processingSql(quoteSchema(store.schema));
  const types = new Set(handledTypes(processor));
  const ids = (await store.readStream(streamId)).filter((event) => types.has(event.type)).map((event) => event.id);
  const runner = await openRunnerSession(db, sql);
  try {
    const run: RunContext = { db, sql, schema: store.schema, processor, decoder: { ...store.decoder, types: processor.events ?? store.decoder.types }, runId, mode: 'replay', simulate: false, policy, ownerToken: runner.token, leaseMs: 5 * 60_000, effectConcurrency: 8 };
    const { rows } = await db.query<{ processor: string }>(sql.startRun, [runId, processor.name, 'replay', false, JSON.stringify(policy), null, null, null, null, ids.length, null, null]);
    if (rows[0]!.processor !== processor.name) throw new ValidationError('runId', `run ${runId} belongs to processor ${rows[0]!.processor}; choose another run id`);
    const size = options.batchSize ?? 1000;
    for (let start = 0; start < ids.length; start += size) {
      await processEvents(run, await readRunEvents(run, ids.slice(start, start + size)), NO_CHECKPOINT);
    }
    await db.query(sql.completeRun, [runId]);
    return { runId, total: ids.length, counters: await runCounters(db, sql, runId) };
  } finally {
    await runner.close();
  }
}
