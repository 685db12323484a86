import type { RecordedEvent } from '../store/event.js';
import { Batch, BatchNeedsSplitting } from './batch.js';
import type { KnownEffects } from './effect-round.js';
import { saveProgress, type Checkpointing } from './progress.js';
import { Counters, type CounterName, type RunContext } from './run-context.js';

async function blockedStreams(run: RunContext): Promise<Set<string>> {
  const { rows } = await run.db.query<{ stream_id: string }>(run.sql.blockedStreams, [run.runId]);
  return new Set(rows.map((row) => row.stream_id));
}

function merge(into: Counters, from: Counters): void {
  for (const [name, value] of from.entries()) into.add(name as CounterName, value);
}

/** Parks an event whose handler failed inside its own transaction, and moves past it. */
async function parkAlone(run: RunContext, event: RecordedEvent, failure: unknown, checkpointing: Checkpointing): Promise<Counters> {
  const counters = new Counters();
  counters.add('events');
  counters.add('parked');
  const error = (failure instanceof Error ? `${failure.name}: ${failure.message}` : String(failure)).slice(0, 2000);
  await run.db.transaction(async (tx) => {
    await tx.query(run.sql.parkMany, [run.processor.name, run.runId, [event.id], [event.streamId], [event.position], ['failed'], [error]]);
    await saveProgress(run, tx, counters, checkpointing, event);
  });
  return counters;
}

/**
 * Processes events as one batch, given their effect ledger entries as read with them (an entry
 * settled since is caught by the reservation). If a handler failed after its SQL
 * ran in the batch's transaction, processes them again one at a time so only that event is parked.
 */
export async function processEvents(
  run: RunContext,
  events: RecordedEvent[],
  ledger: KnownEffects,
  checkpointing: Checkpointing,
  options: { retryingParked?: boolean } = {},
): Promise<Counters> {
  if (events.length === 0) return new Counters();
  try {
    const blocked = options.retryingParked ? new Set<string>() : await blockedStreams(run);
    return await new Batch(run, events, ledger, blocked).execute(checkpointing);
  } catch (err) {
    if (!(err instanceof BatchNeedsSplitting)) throw err;
    if (events.length === 1) return parkAlone(run, events[0]!, err.failure, checkpointing);
  }
  const total = new Counters();
  for (const event of events) merge(total, await processEvents(run, [event], ledger, checkpointing, options));
  return total;
}
