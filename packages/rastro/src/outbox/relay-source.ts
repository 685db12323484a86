import type { Database } from '../db/database.js';
import { quoteSchema } from '../db/schema-name.js';
import { ValidationError } from '../errors.js';
import type { BrokerMessage } from '../brokers/message.js';
import { decodeData, keysFor, type EventDecoder } from '../store/decode.js';
import type { LogCheckpoint } from '../store/event.js';
import { eventFrontierSql } from '../store/sql.js';
import { eventsChannel } from '../store/subscribe.js';
import { outboxChannel } from './outbox.js';
import { outboxSql, partitionOf } from './sql.js';

/** A message as a relay reads it: its place in the log, its partition, and what to publish. */
export interface RelayMessage extends LogCheckpoint {
  partition: number;
  /** Messages with the same key are published in order; a parked one holds back only its key. */
  aggregateKey: string;
  message: BrokerMessage;
  /** Why an event's data could not be decoded into its payload: the relay parks it with this reason. */
  undecodable?: Error;
}

/** What a relay reads: the outbox table, or chosen events of the log. */
export interface RelaySource {
  /** Recorded on the relay's run: `outbox`, or `events` with its filter. */
  readonly name: string;
  readonly channel: string;
  read(after: LogCheckpoint, limit: number, partitions: { count: number; owned: number[] }): Promise<RelayMessage[]>;
  byPositions(positions: number[]): Promise<RelayMessage[]>;
  /** Messages the run has not published, and the age of the oldest, in milliseconds. */
  pending(runId: string, partitions: number): Promise<{ pending: number; lagMs: number | null }>;
}

/** Which events a relay from the log publishes. */
export interface EventLogSelection {
  /** Only these event types. */
  types?: string[];
  /** Only streams whose id starts with this. */
  streamPrefix?: string;
  /** The messages' aggregate type. @defaultValue the stream id up to its first `-` or `:` (its category) */
  aggregateType?: string;
}

type Row = [number, number, string, string, string, string, unknown, Record<string, string>, string | null, number, string, number, number?];

/**
 * Messages as read. An event of the log (a row with its schema version) has its data decoded as
 * every read decodes it (store/decode.ts): the payload is in its type's current version.
 */
async function decode(db: Database, rows: { message: string }[], decoder: EventDecoder = {}): Promise<RelayMessage[]> {
  const parsed = rows.map(({ message }) => JSON.parse(message) as Row);
  const keys = await keysFor(decoder, parsed.filter((row) => row[12] !== undefined).map((row) => row[6]), db);
  return parsed.map(([position, txOrder, id, aggregateType, aggregateId, type, stored, headers, traceparent, occurredMs, aggregateKey, partition, schemaVersion]) => {
    const occurredAt = new Date(occurredMs);
    let payload = stored;
    let undecodable: Error | undefined;
    if (schemaVersion !== undefined) {
      try {
        payload = decodeData({ id, type, streamId: aggregateId, occurredAt, data: stored as Record<string, unknown>, schemaVersion }, decoder, keys);
      } catch (err) {
        undecodable = err as Error;
      }
    }
    return { position, txOrder, partition, aggregateKey, message: { id, aggregateType, aggregateId, type, payload, headers, traceparent, occurredAt }, ...(undecodable ? { undecodable } : {}) };
  });
}

const readValues = (after: LogCheckpoint, limit: number, partitions: { count: number; owned: number[] }) => [after.txOrder, after.position, limit, partitions.count, partitions.owned];

/** The outbox table as a relay source. */
export function outboxSource(db: Database, schema: string): RelaySource {
  const sql = outboxSql(quoteSchema(schema));
  return {
    name: 'outbox',
    channel: outboxChannel(schema),
    read: async (after, limit, partitions) => decode(db, (await db.query<{ message: string }>(sql.readBatch, readValues(after, limit, partitions), { prepare: true })).rows),
    byPositions: async (positions) => decode(db, (await db.query<{ message: string }>(sql.byPositions, [positions])).rows),
    async pending(runId, partitions) {
      const { rows } = await db.query<{ pending: number; lag_ms: number | null }>(sql.pending, [runId, partitions]);
      return { pending: Number(rows[0]?.pending ?? 0), lagMs: rows[0]?.lag_ms === null || rows[0]?.lag_ms === undefined ? null : Number(rows[0].lag_ms) };
    },
  };
}

function validateSelection(selection: EventLogSelection): EventLogSelection {
  const { types, streamPrefix, aggregateType } = selection;
  if (types !== undefined && (!Array.isArray(types) || types.length === 0 || types.some((type) => typeof type !== 'string' || type.length === 0))) {
    throw new ValidationError('types', 'must be a non-empty array of event types');
  }
  if (streamPrefix !== undefined && (typeof streamPrefix !== 'string' || streamPrefix.length === 0)) throw new ValidationError('streamPrefix', 'must be a non-empty string');
  if (aggregateType !== undefined && !/^[A-Za-z0-9_-]{1,100}$/.test(aggregateType)) throw new ValidationError('aggregateType', 'must be 1 to 100 letters, digits, _ or -');
  if (types === undefined && streamPrefix === undefined) throw new ValidationError('source', 'choose the events to relay: types, a stream prefix, or both');
  return selection;
}

/**
 * Chosen events of the log as a relay source, so an event-sourced service writes once: the
 * event is the message (its id, its stream as the aggregate, its data as the payload, its
 * metadata's string fields as headers).
 */
export function eventLogSource(db: Database, schema: string, selection: EventLogSelection, decoder: EventDecoder = {}): RelaySource {
  const { types: selected, streamPrefix, aggregateType } = validateSelection(selection);
  const s = quoteSchema(schema);
  const aggregateTypeSql = (param: string) => `coalesce(${param}::text, substring(e.stream_id from '^([^:-]+)[:-]'), 'stream')`;
  const json = (partition: string, typeParam: string) => `json_build_array(e.position, e.tx_order, e.id, ${aggregateTypeSql(typeParam)}, e.stream_id, e.type, e.data,
      coalesce((select jsonb_object_agg(k, v) from jsonb_each_text(e.metadata) as m(k, v) where k ~ '^[A-Za-z0-9_-]+$' and k <> 'traceparent'), '{}'::jsonb),
      e.metadata->>'traceparent', floor(extract(epoch from e.occurred_at) * 1000), e.stream_id, ${partition}, e.schema_version)::text as message`;
  const filter = `($5::text[] is null or e.type = any($5::text[])) and ($6::text is null or starts_with(e.stream_id, $6))`;
  const readBatch = `select ${json(`${partitionOf('e.stream_id', '$4')}::int`, '$7')} from ${s}.events e
    where (e.tx_order, e.position) > ($1, $2) and e.tx_order < ${eventFrontierSql(s)} and ${filter}
      and ${partitionOf('e.stream_id', '$4')} = any($8::int[])
    order by e.tx_order, e.position limit $3`;
  const byPositions = `select ${json('0', '$4')} from ${s}.events e where e.position = any($1::bigint[]) and ${filter.replace(/\$5/g, '$2').replace(/\$6/g, '$3')}
    order by e.tx_order, e.position`;
  const pending = `with cp as (select partition, tx_order, position from ${s}.processor_checkpoints where run_id = $1),
    unpublished as (
      select e.recorded_at from ${s}.events e left join cp on cp.partition = ${partitionOf('e.stream_id', '$2')}
      where ${filter.replace(/\$5/g, '$3').replace(/\$6/g, '$4')}
        and e.tx_order >= (case when (select count(*) from cp) < $2 then 0 else (select min(tx_order) from cp) end)
        and (cp.partition is null or (e.tx_order, e.position) > (cp.tx_order, cp.position))
      union all
      select e.recorded_at from ${s}.parked_events p join ${s}.events e on e.id = p.event_id where p.run_id = $1)
    select count(*)::bigint as pending, floor(extract(epoch from now() - min(recorded_at)) * 1000)::bigint as lag_ms from unpublished`;
  const name = `events:${JSON.stringify({ types: selected ?? null, streamPrefix: streamPrefix ?? null, aggregateType: aggregateType ?? null })}`;
  return {
    name,
    channel: eventsChannel(schema),
    read: async (after, limit, partitions) =>
      decode(db, (await db.query<{ message: string }>(readBatch, [after.txOrder, after.position, limit, partitions.count, selected ?? null, streamPrefix ?? null, aggregateType ?? null, partitions.owned], { prepare: true })).rows, decoder),
    byPositions: async (positions) => decode(db, (await db.query<{ message: string }>(byPositions, [positions, selected ?? null, streamPrefix ?? null, aggregateType ?? null])).rows, decoder),
    async pending(runId, partitions) {
      const { rows } = await db.query<{ pending: number; lag_ms: number | null }>(pending, [runId, partitions, selected ?? null, streamPrefix ?? null]);
      return { pending: Number(rows[0]?.pending ?? 0), lagMs: rows[0]?.lag_ms === null || rows[0]?.lag_ms === undefined ? null : Number(rows[0].lag_ms) };
    },
  };
}
