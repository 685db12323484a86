import type { Queryable } from '../db/database.js';
import { instant, int8, json } from '../db/values.js';
import { decodeData, keysFor, type EventDecoder } from './decode.js';
import type { RecordedEvent } from './event.js';

/** A stream's folded state at a version. */
export interface Snapshot<State> {
  version: number;
  state: State;
}

/** What folding a stream into state needs of each event. */
export type FoldableEvent = Pick<RecordedEvent, 'streamVersion' | 'type' | 'data' | 'occurredAt'>;

/** The latest snapshot of a stream, if any, and the events after it. */
export interface StreamTail<State> {
  snapshot: Snapshot<State> | null;
  events: FoldableEvent[];
  /**
   * The trail link (hex) of the event the returned events follow: the snapshot's last one, or the
   * one at `afterVersion`; null when there is none (or it predates the trail). A reader holding
   * the stream at `afterVersion` compares it with the head it holds: another value means the
   * stream was written again from an earlier version (a failover's lost tail), and what it holds
   * is no longer the stream's.
   */
  base: string | null;
  /** The stream's head as of this read: the link of its last event, to pass to `appendNew`; null as `base`. */
  head: string | null;
}

/** Snapshot statements for one schema (`s` validated and quoted). */
export function snapshotSql(s: string) {
  return {
    /**
     * One round trip: the snapshot row (kind 0), the event at its version for its hash (kind 1),
     * then the events after it with only what a fold needs (kind 2). The constant upper bound keeps the planner on the primary key: with the lower bound
     * alone it cannot know how many versions follow the snapshot and may scan the whole stream.
     */
    tail: `with snap as (select version, state from ${s}.snapshots where stream_id = $1)
      select 0 as kind, version as stream_version, null::text as type, state as data, null::timestamptz as occurred_at, null::uuid as id, null::smallint as schema_version, null::text as hash
        from snap
      union all
      select 1, stream_version, null, null, null, null, null, encode(hash, 'hex')
        from ${s}.events
       where stream_id = $1 and stream_version = (select version from snap)
      union all
      select 2, stream_version, type, data, occurred_at, id, schema_version, encode(hash, 'hex')
        from ${s}.events
       where stream_id = $1 and stream_version > coalesce((select version from snap), 0) and stream_version <= 9007199254740991
      order by kind, stream_version`,
    /**
     * `tail` for a reader that holds the stream's state at version $2: the snapshot only when it is
     * newer, the event the rest follows (to tell the reader's history from another one written
     * at the same versions), and the events after it (none, usually: two index probes).
     */
    tailAfter: `with snap as (select version, state from ${s}.snapshots where stream_id = $1 and version > $2)
      select 0 as kind, version as stream_version, null::text as type, state as data, null::timestamptz as occurred_at, null::uuid as id, null::smallint as schema_version, null::text as hash
        from snap
      union all
      select 1, stream_version, null, null, null, null, null, encode(hash, 'hex')
        from ${s}.events
       where stream_id = $1 and stream_version = greatest(coalesce((select version from snap), 0), $2)
      union all
      select 2, stream_version, type, data, occurred_at, id, schema_version, encode(hash, 'hex')
        from ${s}.events
       where stream_id = $1 and stream_version > greatest(coalesce((select version from snap), 0), $2) and stream_version <= 9007199254740991
      order by kind, stream_version`,
    save: `insert into ${s}.snapshots (stream_id, version, state) values ($1, $2, $3)
      on conflict (stream_id) do update set version = excluded.version, state = excluded.state, taken_at = now()
      where snapshots.version < excluded.version`,
    dropByPrefix: `delete from ${s}.snapshots where starts_with(stream_id, $1)`,
    streamsByPrefix: `select stream_id, version from ${s}.streams where starts_with(stream_id, $1) and stream_id > $2 order by stream_id limit $3`,
  } as const;
}

export type SnapshotSql = ReturnType<typeof snapshotSql>;

type TailRow = { kind: unknown; stream_version: unknown; type: string; data: unknown; occurred_at: unknown; id: string; schema_version: unknown; hash: string | null };

/**
 * The stream's latest snapshot and the events after it, their data decoded as every read decodes
 * it (store/decode.ts); with `afterVersion`, only what is newer than that version.
 */
export async function readStreamTail<State>(target: Queryable, sql: SnapshotSql, streamId: string, decoder: EventDecoder = {}, afterVersion?: number): Promise<StreamTail<State>> {
  const { rows } = await target.query<TailRow>(
    afterVersion === undefined ? sql.tail : sql.tailAfter,
    afterVersion === undefined ? [streamId] : [streamId, afterVersion],
    { prepare: true },
  );
  const snapshotRow = rows.find((row) => int8(row.kind) === 0);
  const snapshot = snapshotRow ? { version: int8(snapshotRow.stream_version), state: json<State>(snapshotRow.data) } : null;
  const base = rows.find((row) => int8(row.kind) === 1)?.hash ?? null;
  const tail = rows.filter((row) => int8(row.kind) === 2).map((row) => ({ row, data: json<Record<string, unknown>>(row.data) }));
  const keys = await keysFor(decoder, tail.map(({ data }) => data), target);
  const events = tail.map(({ row, data }) => {
    const occurredAt = instant(row.occurred_at);
    const decoded = decodeData({ id: row.id, type: row.type, streamId, occurredAt, data, schemaVersion: int8(row.schema_version) }, decoder, keys);
    return { streamVersion: int8(row.stream_version), type: row.type, data: decoded, occurredAt };
  });
  return { snapshot, events, base, head: tail.length > 0 ? tail[tail.length - 1]!.row.hash : base };
}

export async function saveSnapshot(target: Queryable, sql: SnapshotSql, streamId: string, snapshot: Snapshot<unknown>): Promise<void> {
  await target.query(sql.save, [streamId, snapshot.version, JSON.stringify(snapshot.state)]);
}
