import type { Database, Queryable } from '../db/database.js';
import { holdParkedStreams } from '../processing/parked-streams.js';
import { saveProgress } from '../processing/progress.js';
import { isAfter } from '../processing/read-batch.js';
import { Counters } from '../processing/run-context.js';
import type { ProcessingSql } from '../processing/sql.js';
import type { LogCheckpoint } from '../store/event.js';
import type { PublishedBatch, RelayCounter } from './publish-batch.js';
import type { RelayMessage } from './relay-source.js';

interface RelayRun {
  db: Database;
  sql: ProcessingSql;
  name: string;
  runId: string;
  /** The key of the run's parked-stream holds. */
  holdKey: string;
}

interface PublishedRead {
  messages: RelayMessage[];
  batch: PublishedBatch;
  /** Aggregates that had parked messages when the batch was read. */
  blocked: ReadonlySet<string>;
  owned: number[];
  /** The last message read, past which the partitions move when nothing interrupted the batch. */
  last: LogCheckpoint;
}

/**
 * Each owned partition's new checkpoint. Uninterrupted, all of them move past the whole read;
 * interrupted, each moves past the messages the broker has, up to its first one it does not
 * (undefined: it stays).
 */
function checkpointsAfter({ messages, batch, owned, last }: PublishedRead): Map<number, LogCheckpoint | undefined> {
  const through = new Map<number, LogCheckpoint | undefined>(owned.map((partition) => [partition, last]));
  if (batch.interruption === undefined) return through;
  const stopped = new Set<number>();
  const previous = new Map<number, LogCheckpoint>();
  for (const [i, message] of messages.entries()) {
    if (stopped.has(message.partition)) continue;
    if (batch.states[i] === 'unsent') {
      stopped.add(message.partition);
      through.set(message.partition, previous.get(message.partition));
    } else previous.set(message.partition, message);
  }
  return through;
}

/** Saves the checkpoints, one statement per distinct one (one in all for an uninterrupted batch), with the counters. */
async function saveCheckpoints(run: RelayRun, tx: Queryable, through: Map<number, LogCheckpoint | undefined>, counters: Counters<RelayCounter>, last: LogCheckpoint): Promise<void> {
  const groups = new Map<string, { cp: LogCheckpoint; partitions: number[] }>();
  for (const [partition, cp] of through) {
    if (!cp) continue;
    const key = `${cp.txOrder}:${cp.position}`;
    const group = groups.get(key) ?? groups.set(key, { cp, partitions: [] }).get(key)!;
    group.partitions.push(partition);
  }
  let counted = false;
  for (const { cp, partitions } of groups.values()) {
    await saveProgress(run, tx, counted ? new Counters() : counters, { partitions, at: () => cp }, cp);
    counted = true;
  }
  if (!counted) await saveProgress(run, tx, counters, { partitions: [], at: () => last }, last);
}

/**
 * A relay batch's bookkeeping in one transaction: first the hold on aggregates it parks
 * messages behind (a retry of them may not be running, and their block must still be there),
 * then the parked messages behind each new checkpoint, then the checkpoints and counters.
 */
export async function commitRelayBatch(run: RelayRun, read: PublishedRead): Promise<void> {
  const { messages, batch, blocked } = read;
  const through = checkpointsAfter(read);
  const parked = messages.flatMap((message, i) => {
    const state = batch.states[i];
    const cp = through.get(message.partition);
    return (state === 'failed' || state === 'waiting') && cp && !isAfter(message, cp) ? [{ message, state, error: batch.errors[i] }] : [];
  });
  batch.counters.add('parked', parked.length);
  const held = [...new Set(parked.filter((p) => p.state === 'waiting' && blocked.has(p.message.aggregateKey)).map((p) => p.message.aggregateKey))];
  await run.db.transaction(async (tx) => {
    await holdParkedStreams(tx, run.sql, run.holdKey, run.runId, held);
    if (parked.length > 0) {
      await tx.query(run.sql.parkMany, [
        run.name, run.runId, parked.map((p) => p.message.message.id), parked.map((p) => p.message.aggregateKey),
        parked.map((p) => p.message.position), parked.map((p) => p.state), parked.map((p) => p.error),
      ]);
    }
    await saveCheckpoints(run, tx, through, batch.counters, read.last);
  });
}
