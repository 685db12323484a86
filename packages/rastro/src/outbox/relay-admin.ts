import type { Publisher } from '../brokers/message.js';
import { quoteSchema } from '../db/schema-name.js';
import { ValidationError } from '../errors.js';
import { holdingParkedStream, parkedHoldKey } from '../processing/parked-streams.js';
import { saveProgress, NO_CHECKPOINT } from '../processing/progress.js';
import { Counters } from '../processing/run-context.js';
import { livenessOf, type RunLiveness } from '../processing/run-status.js';
import { processingSql } from '../processing/sql.js';
import type { EventStore } from '../store/event-store.js';
import { LOG_START } from '../store/event.js';
import type { RelayCounter } from './publish-batch.js';
import { eventLogSource, outboxSource, type EventLogSelection, type RelaySource } from './relay-source.js';

/** A relay run and how far behind it is. */
export interface RelayStatus {
  name: string;
  runId: string;
  /** `outbox`, or `events:` and the selection. */
  source: string;
  partitions: number;
  /** From its runners' liveness: running, stopped (its last runner stopped), or dead (they are gone without stopping). */
  status: Exclude<RunLiveness, 'completed'>;
  /** When it stopped or died (its last sign of life); null while running. */
  since: Date | null;
  /** Messages not yet published: after the relay's checkpoints, or parked. */
  pending: number;
  /** Age of the oldest message not yet published, in milliseconds; null when there is none. The relay's lag. */
  lagMs: number | null;
  parked: number;
  counters: Partial<Record<RelayCounter, number>>;
}

/** A message a relay parked: refused by the broker, or waiting behind one of its aggregate. */
export interface ParkedMessage {
  relay: string;
  messageId: string;
  aggregateKey: string;
  position: number;
  reason: 'failed' | 'waiting';
  error: string | null;
  parkedAt: Date;
}

interface RunRow {
  run_id: string;
  processor: string;
  source: string;
  partitions: number;
  status: string;
  updated_at: Date;
  heartbeat_at: Date | null;
  stopped_at: Date | null;
  alive: boolean;
}

/** What a relay run reads, from the `source` its run row records. */
export function relaySourceOf(store: EventStore<any>, source: string): RelaySource {
  if (source === 'outbox') return outboxSource(store.db, store.schema);
  if (source.startsWith('events:')) {
    const { types, streamPrefix, aggregateType } = JSON.parse(source.slice('events:'.length)) as Record<string, never>;
    const selection: EventLogSelection = { types: types ?? undefined, streamPrefix: streamPrefix ?? undefined, aggregateType: aggregateType ?? undefined };
    return eventLogSource(store.db, store.schema, selection);
  }
  throw new ValidationError('source', `unknown relay source ${source}`);
}

/**
 * Looking after relays: their lag and counts, and the messages they parked.
 *
 * @example
 * ```ts
 * const relays = relayAdmin(store)
 * for (const relay of await relays.status()) console.log(relay.name, relay.lagMs)
 * await relays.retry(messageId, publisher)
 * ```
 */
export function relayAdmin(store: EventStore<any>) {
  const db = store.db;
  const s = quoteSchema(store.schema);
  const sql = processingSql(s);
  const parkedSql = `select p.processor, p.event_id, p.stream_id, p.position, p.reason, p.error, p.parked_at from ${s}.parked_events p
    join ${s}.processor_runs r on r.run_id = p.run_id and r.mode = 'relay'
    where ($1::text is null or p.run_id = $1) order by p.run_id, p.stream_id, p.position limit $2`;
  const findSql = `select p.run_id, p.stream_id, r.source, r.processor from ${s}.parked_events p
    join ${s}.processor_runs r on r.run_id = p.run_id and r.mode = 'relay' where p.event_id = $1`;

  async function find(messageId: string): Promise<{ run_id: string; stream_id: string; source: string; processor: string }> {
    if (!/^[0-9a-f-]{36}$/i.test(messageId)) throw new ValidationError('messageId', 'must be the id of a parked message (a UUID)');
    const { rows } = await db.query<{ run_id: string; stream_id: string; source: string; processor: string }>(findSql, [messageId]);
    if (!rows[0]) throw new ValidationError('messageId', `no parked message ${messageId}`);
    return rows[0];
  }

  async function skipMessage(runId: string, messageId: string): Promise<void> {
    const counters = new Counters<RelayCounter>();
    counters.add('skipped');
    await db.transaction(async (tx) => {
      await tx.query(sql.unparkMany, [runId, [messageId]]);
      await saveProgress({ sql, runId }, tx, counters, NO_CHECKPOINT, LOG_START);
    });
  }

  /** Publishes the aggregate's parked messages in order, holding it; stops at the first the broker refuses again. */
  async function retryAggregate(found: { run_id: string; stream_id: string; source: string; processor: string }, publisher: Publisher, skip?: string) {
    const source = relaySourceOf(store, found.source);
    const run = { sql, runId: found.run_id };
    let published = 0;
    return holdingParkedStream(db, sql, parkedHoldKey(store.schema, found.run_id), found.stream_id, async () => {
      if (skip) await skipMessage(found.run_id, skip);
      const parkedOf = async () => (await db.query<{ position: number }>(`select position from ${s}.parked_events where run_id = $1 and stream_id = $2 order by position`, [found.run_id, found.stream_id])).rows.map((row) => Number(row.position));
      for (;;) {
        const positions = await parkedOf();
        if (positions.length === 0) return { published, stillParked: 0 };
        for (const message of await source.byPositions(positions)) {
          try {
            await publisher.publish(message.message);
          } catch (err) {
            const error = (err instanceof Error ? err.message : String(err)).slice(0, 2000);
            await db.query(sql.parkMany, [found.processor, found.run_id, [message.message.id], [found.stream_id], [message.position], ['failed'], [error]]);
            return { published, stillParked: (await parkedOf()).length };
          }
          const counters = new Counters<RelayCounter>();
          counters.add('published');
          await db.transaction(async (tx) => {
            await tx.query(sql.unparkMany, [found.run_id, [message.message.id]]);
            await saveProgress(run, tx, counters, NO_CHECKPOINT, LOG_START);
          });
          published++;
        }
      }
    });
  }

  return {
    async status(): Promise<RelayStatus[]> {
      const { rows } = await db.query<RunRow>(sql.listRelayRuns);
      return Promise.all(rows.map(async (row) => {
        const [{ pending, lagMs }, parked, counters] = await Promise.all([
          relaySourceOf(store, row.source).pending(row.run_id, row.partitions),
          db.query<{ n: number }>(`select count(*)::int as n from ${s}.parked_events where run_id = $1`, [row.run_id]),
          db.query<{ name: RelayCounter; value: number }>(sql.counters, [row.run_id]),
        ]);
        const { status, since } = livenessOf(row);
        return {
          name: row.processor, runId: row.run_id, source: row.source, partitions: row.partitions, status: status === 'completed' ? 'stopped' : status, since, pending, lagMs,
          parked: parked.rows[0]?.n ?? 0, counters: Object.fromEntries(counters.rows.map((c) => [c.name, Number(c.value)])),
        };
      }));
    },
    async parked(options: { relay?: string; limit?: number } = {}): Promise<ParkedMessage[]> {
      const { rows } = await db.query<{ processor: string; event_id: string; stream_id: string; position: number; reason: 'failed' | 'waiting'; error: string | null; parked_at: Date }>(
        parkedSql, [options.relay ? `relay:${options.relay}` : null, options.limit ?? 1000]);
      return rows.map((row) => ({ relay: row.processor, messageId: row.event_id, aggregateKey: row.stream_id, position: Number(row.position), reason: row.reason, error: row.error, parkedAt: row.parked_at }));
    },
    /** Publishes the parked message's aggregate again, from its first parked message, in order. */
    async retry(messageId: string, publisher: Publisher) {
      return retryAggregate(await find(messageId), publisher);
    },
    /** Gives up on one message (it is never published by this relay), then retries the rest of its aggregate. */
    async skip(messageId: string, publisher: Publisher) {
      return retryAggregate(await find(messageId), publisher, messageId);
    },
  };
}

export type RelayAdmin = ReturnType<typeof relayAdmin>;
