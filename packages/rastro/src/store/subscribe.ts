import type { Database } from '../db/database.js';
import type { LogCheckpoint, RecordedEvent } from './event.js';
import { WakeUp } from './wake-up.js';

export interface SubscribeOptions {
  /** Events read per query. @defaultValue 500 */
  batchSize?: number;
  /** The polling backstop: the longest wait between reads when no notification arrives. @defaultValue 1000 */
  pollIntervalMs?: number;
  /** Called when a read fails; the subscription waits one poll interval and reads again. */
  onReadError?: (err: unknown) => void;
}

/** A running subscription. */
export interface Subscription {
  /** The last event handled, or where the subscription started. */
  readonly checkpoint: LogCheckpoint;
  /** Stops after the event being handled; resolves when the loop has ended. */
  stop(): Promise<void>;
  /** Resolves when stopped; rejects with the handler's error if a handler throws (the loop stops there). */
  readonly done: Promise<void>;
}

interface SubscribeArgs {
  db: Database;
  schema: string;
  read: (after: LogCheckpoint, limit: number) => Promise<RecordedEvent[]>;
  after: LogCheckpoint;
  handler: (event: RecordedEvent) => Promise<void> | void;
  options?: SubscribeOptions;
}

/** The channel appends notify on, one per schema. */
export function eventsChannel(schema: string): string {
  return `rastro_events_${schema}`;
}

/**
 * The channel a batch's write transaction notifies on as it commits, one per schema, when it held
 * readers back (it ran handlers' own statements, so took no mark of appending nothing): events
 * committed while it was open, held back behind it (the no-skip frontier), may be read now.
 */
export function releaseChannel(schema: string): string {
  return `rastro_release_${schema}`;
}

/**
 * Tails the log from a checkpoint: LISTEN/NOTIFY wakes it within milliseconds of a commit, and
 * a poll every `pollIntervalMs` covers lost notifications and transactions that end without
 * appending (they may release events held back behind them).
 */
export function subscribeToLog({ db, schema, read, after, handler, options = {} }: SubscribeArgs): Subscription {
  const batchSize = options.batchSize ?? 500;
  const pollIntervalMs = options.pollIntervalMs ?? 1000;
  let checkpoint = after;
  const wakeUp = new WakeUp();

  async function loop(): Promise<void> {
    const unlisten = await db.listen(eventsChannel(schema), wakeUp.signal);
    try {
      while (!wakeUp.isStopped) {
        wakeUp.reset();
        let events: RecordedEvent[];
        try {
          events = await read(checkpoint, batchSize);
        } catch (err) {
          options.onReadError?.(err);
          await wakeUp.sleep(pollIntervalMs, { backoff: true });
          continue;
        }
        for (const event of events) {
          if (wakeUp.isStopped) return;
          await handler(event);
          checkpoint = { txOrder: event.txOrder, position: event.position };
        }
        if (events.length < batchSize) await wakeUp.sleep(pollIntervalMs);
      }
    } finally {
      await unlisten();
    }
  }

  const done = loop();
  done.catch(() => undefined);
  return {
    get checkpoint() {
      return checkpoint;
    },
    async stop() {
      wakeUp.stop();
      await done.catch(() => undefined);
    },
    done,
  };
}
