import type { RecordedEvent } from '../store/event.js';
import { Batch, BatchNeedsSplitting } from './batch.js';
import { saveProgress, type Checkpointing } from './progress.js';
import type { RunEvents } from './read-batch.js';
import { Counters, type CounterName, type RunContext } from './run-context.js';

/** What processing a batch did: its counters (persisted with it) and the streams it parked. */
export interface BatchOutcome {
  counters: Counters;
  parkedStreams: Set<string>;
  /** Under a {@link Pipeline}: the batch's progress, still being saved. */
  saving?: Promise<void>;
  /** The projection rows it wrote (as `rowKey` names them), when it wrote any. */
  rows?: Set<string>;
  /** The projections its handlers wrote to. */
  projections?: Set<string>;
}

/**
 * Batches processed one after another by the same runner, where a batch that only moves the
 * run's progress need not be saved before the next one starts (a replay, whose next batch is
 * already read). Commits stay in order: each waits for `previous`.
 */
export interface Pipeline {
  previous: Promise<void>;
}

function merge(into: BatchOutcome, from: BatchOutcome): void {
  for (const [name, value] of from.counters.entries()) into.counters.add(name as CounterName, value);
  for (const stream of from.parkedStreams) into.parkedStreams.add(stream);
  for (const row of from.rows ?? []) (into.rows ??= new Set()).add(row);
  for (const projection of from.projections ?? []) (into.projections ??= new Set()).add(projection);
}

/** Parks an event whose handler failed inside its own transaction, and moves past it. */
async function parkAlone(run: RunContext, event: RecordedEvent, failure: unknown, checkpointing: Checkpointing): Promise<BatchOutcome> {
  const counters = new Counters();
  counters.add('events');
  counters.add('parked');
  const error = (failure instanceof Error ? `${failure.name}: ${failure.message}` : String(failure)).slice(0, 2000);
  await run.db.transaction(async (tx) => {
    await tx.query(run.sql.parkMany, [run.processor.name, run.runId, [event.id], [event.streamId], [event.position], ['failed'], [error]]);
    await saveProgress(run, tx, counters, checkpointing, event);
  });
  return { counters, parkedStreams: new Set([event.streamId]) };
}

/**
 * Processes events as one batch, given their effect ledger entries, blocked streams and stored
 * rows as read with them (an effect settled since is caught by the reservation; `stale` rows, which
 * a batch wrote since the read, are probed again). If a handler failed after its SQL ran in the
 * batch's transaction, processes them again one at a time so only that event is parked.
 */
export async function processEvents(
  run: RunContext, input: RunEvents, checkpointing: Checkpointing, pipeline?: Pipeline, stale: readonly ReadonlySet<string>[] = [],
): Promise<BatchOutcome> {
  const { events } = input;
  if (events.length === 0) return { counters: new Counters(), parkedStreams: new Set(), saving: pipeline?.previous };
  try {
    const stored = input.stored && { rows: input.stored, stale };
    return await new Batch(run, events, input.ledger, input.blocked, input.unpark, stored).execute(checkpointing, pipeline);
  } catch (err) {
    if (!(err instanceof BatchNeedsSplitting)) throw err;
    await pipeline?.previous;
    if (events.length === 1) return parkAlone(run, events[0]!, err.failure, checkpointing);
  }
  const total: BatchOutcome = { counters: new Counters(), parkedStreams: new Set() };
  // A stream parked by an earlier event of this batch blocks the later ones.
  const blocked = new Set(input.blocked);
  for (const event of events) {
    const unpark = input.unpark?.includes(event.id) ? [event.id] : undefined;
    const outcome = await processEvents(run, { events: [event], ledger: input.ledger, blocked, unpark }, checkpointing);
    merge(total, outcome);
    for (const stream of outcome.parkedStreams) blocked.add(stream);
  }
  return total;
}
