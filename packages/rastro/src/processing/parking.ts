import { quoteSchema } from '../db/schema-name.js';
import { AmbiguousParkedEventError, ValidationError } from '../errors.js';
import type { EventStore } from '../store/event-store.js';
import { policyFor } from './policy.js';
import type { Processor } from './processor.js';
import { processEvents } from './process-events.js';
import { NO_CHECKPOINT } from './progress.js';
import { effectsOfEvents, effectsSettled, type AlreadyDoneEffect, type ParkedEventEffect } from './parked-effects.js';
import { holdingParkedStream, parkedHoldKey } from './parked-streams.js';
import { readRunEvents } from './read-batch.js';
import type { RunContext } from './run-context.js';
import { processingSql } from './sql.js';

export interface ParkedEvent {
  processor: string;
  runId: string;
  eventId: string;
  streamId: string;
  position: number;
  reason: 'failed' | 'waiting';
  error: string | null;
  parkedAt: Date;
  /** The effect ledger's entries of the event made by any run of its processor (see {@link ParkedEventEffect}). */
  effects: ParkedEventEffect[];
  /**
   * Every effect the ledger holds for the event is `done` (and it holds one), typically by a
   * replay that handled the event since it was parked: a retry calls none of them again. The
   * entry still holds its stream back in its run until it is retried or skipped.
   */
  settled: boolean;
}

/** What a retry or a skip did. */
export interface ParkedRetryResult {
  /** Events handled in the run and unparked. */
  handled: number;
  /** Events of the stream still parked in the run (a retry stops at the first that fails again). */
  stillParked: number;
  /** Effects of the handled events a run of the processor had already recorded `done` (a replay): not called again. */
  alreadyDone: AlreadyDoneEffect[];
}

interface ParkedRow {
  processor: string;
  run_id: string;
  event_id: string;
  stream_id: string;
  position: number;
  reason: ParkedEvent['reason'];
  error: string | null;
  parked_at: Date;
}

/**
 * Events a run could not handle, and the later events of their streams waiting behind them.
 *
 * @example
 * ```ts
 * const parked = parkedEvents(store)
 * await parked.retry(processor, eventId, { runId: 'live:tips' }) // runs the stream's parked events again, in order
 * ```
 */
export function parkedEvents(store: EventStore<any>) {
  const sql = processingSql(quoteSchema(store.schema));
  const db = store.db;

  /**
   * Refuses a run id no run has: listing or acting on it could only find nothing, which would
   * read as "nothing is parked". A live run's id is `live:<processor>`, never a bare `live`.
   */
  async function assertRunExists(runId: string): Promise<void> {
    const { rows } = await db.query<{ run_id: string; mode: string }>(sql.runIdsFor, [runId]);
    if (rows.some((row) => row.run_id === runId)) return;
    const live = rows.filter((row) => row.mode === 'live').map((row) => row.run_id);
    throw new ValidationError('runId', `no run ${JSON.stringify(runId)}: a live run's id is live:<processor>${live.length ? ` (here: ${live.join(', ')})` : ''}, a relay's relay:<name>, a replay's the id it was started with`);
  }

  /**
   * The one entry an action addresses: the event's entry in `runId`, or its only entry. An event
   * parked in several runs (the live run, a replay fixing it) needs its run named.
   */
  async function find(eventId: string, runId?: string): Promise<{ processor: string; run_id: string; stream_id: string }> {
    const { rows } = await db.query<{ processor: string; run_id: string; stream_id: string }>(sql.parkedEvent, [eventId, runId ?? null]);
    if (!rows[0]) {
      if (runId !== undefined) await assertRunExists(runId);
      throw new ValidationError('eventId', `no parked event ${eventId}${runId === undefined ? '' : ` in run ${runId}`}`);
    }
    if (rows.length > 1) throw new AmbiguousParkedEventError(eventId, rows.map((row) => row.run_id));
    return rows[0];
  }

  /**
   * Runs the stream's parked events again in order, holding the stream so a runner cannot park a
   * new event behind it meanwhile (it waits, then finds the block lifted and handles the event).
   * Each event is unparked in the transaction that handles it; a new failure parks it again
   * there, and the retry stops. Events parked behind the stream while it ran are retried too.
   */
  async function retryStream(processor: Processor, runId: string, streamId: string, skip?: string): Promise<ParkedRetryResult> {
    const { rows: runs } = await db.query<{ mode: 'live' | 'replay'; simulate: boolean; policy: unknown }>(sql.getRun, [runId]);
    const info = runs[0];
    if (!info) throw new ValidationError('runId', `no run ${runId}`);
    let handled = 0;
    const alreadyDone: AlreadyDoneEffect[] = [];
    return holdingParkedStream(db, sql, parkedHoldKey(store.schema, runId), streamId, async (runner) => {
      const run: RunContext = {
        db, sql, schema: store.schema, processor, decoder: { ...store.decoder, types: processor.events ?? store.decoder.types }, runId, mode: info.mode, simulate: info.simulate, policy: policyFor(processor, info.policy),
        ownerToken: runner.token, leaseMs: 5 * 60_000, effectConcurrency: 8,
      };
      if (skip) await db.query(sql.unparkMany, [runId, [skip]]);
      const parkedIds = async () => (await db.query<{ event_id: string }>(sql.parkedOfStream, [runId, streamId])).rows.map((row) => row.event_id);
      const tried = new Set<string>();
      for (;;) {
        const ids = await parkedIds();
        const fresh = ids.filter((id) => !tried.has(id));
        if (fresh.length === 0) return { handled, stillParked: ids.length, alreadyDone };
        // Read before handling: a `done` entry is never called again, so these are not sent by the retry.
        const [input, recorded] = await Promise.all([readRunEvents(run, fresh), effectsOfEvents(db, sql, processor.name, fresh)]);
        for (const event of input.events) {
          tried.add(event.id);
          const outcome = await processEvents(run, { ...input, events: [event], unpark: [event.id] }, NO_CHECKPOINT);
          if (outcome.counters.get('parked') > 0) return { handled, stillParked: (await parkedIds()).length, alreadyDone };
          handled++;
          for (const effect of recorded.get(event.id) ?? []) if (effect.state === 'done') alreadyDone.push({ eventId: event.id, ...effect });
        }
      }
    });
  }

  return {
    /**
     * Parked entries, of run `runId` only when given. A `runId` no run has is refused with a
     * {@link ValidationError} naming `runId`, rather than answered with an empty list.
     */
    async list(options: { runId?: string; limit?: number } = {}): Promise<ParkedEvent[]> {
      if (options.runId !== undefined) await assertRunExists(options.runId);
      const { rows } = await db.query<ParkedRow>(sql.listParked, [options.runId ?? null, options.limit ?? 1000]);
      const recorded = new Map<string, Map<string, ParkedEventEffect[]>>();
      for (const name of new Set(rows.map((row) => row.processor))) {
        recorded.set(name, await effectsOfEvents(db, sql, name, rows.filter((row) => row.processor === name).map((row) => row.event_id)));
      }
      return rows.map((row) => {
        const effects = recorded.get(row.processor)?.get(row.event_id) ?? [];
        return {
          processor: row.processor, runId: row.run_id, eventId: row.event_id, streamId: row.stream_id,
          position: Number(row.position), reason: row.reason, error: row.error, parkedAt: row.parked_at, effects, settled: effectsSettled(effects),
        };
      });
    },
    /**
     * The entry an action would address ({@link find}): throws a {@link ValidationError} when
     * there is none, an {@link AmbiguousParkedEventError} when the event is parked in several
     * runs and no `runId` names one.
     */
    async entry(eventId: string, options: { runId?: string } = {}): Promise<{ processor: string; runId: string; streamId: string }> {
      const row = await find(eventId, options.runId);
      return { processor: row.processor, runId: row.run_id, streamId: row.stream_id };
    },
    /**
     * Retries the parked event's stream, in the run `runId` (needed when it is parked in several),
     * from its first parked event. Effects the ledger already holds `done` (a replay made them) are
     * not called again: `alreadyDone` lists them, so a retry of a settled entry only unparks it.
     */
    async retry(processor: Processor, eventId: string, options: { runId?: string } = {}): Promise<ParkedRetryResult> {
      const parked = await find(eventId, options.runId);
      return retryStream(processor, parked.run_id, parked.stream_id);
    },
    /** Gives up on one event in one run (it is never handled there), then retries the rest of its stream. */
    async skip(processor: Processor, eventId: string, options: { runId?: string } = {}): Promise<ParkedRetryResult> {
      const parked = await find(eventId, options.runId);
      return retryStream(processor, parked.run_id, parked.stream_id, eventId);
    },
  };
}
