import type { Queryable } from '../db/database.js';
import { toRecordedEvent, type EventRow, type RecordedEvent } from './event.js';

/** A stream's folded state at a version. */
export interface Snapshot<State> {
  version: number;
  state: State;
}

/** The latest snapshot of a stream, if any, and the events after it. */
export interface StreamTail<State> {
  snapshot: Snapshot<State> | null;
  events: RecordedEvent[];
}

/** Snapshot statements for one schema (`s` validated and quoted). */
export function snapshotSql(s: string) {
  return {
    /** One round trip: the snapshot row (kind 0) then the events after it (kind 1). */
    tail: `with snap as (select version, state from ${s}.snapshots where stream_id = $1)
      select 0 as kind, null::bigint as position, null::bigint as tx_order, $1 as stream_id, version as stream_version,
             null::uuid as id, null::text as type, state as data, null::jsonb as metadata, null::timestamptz as occurred_at, null::timestamptz as recorded_at
        from snap
      union all
      select 1, position, tx_order, stream_id, stream_version, id, type, data, metadata, occurred_at, recorded_at
        from ${s}.events
       where stream_id = $1 and stream_version > coalesce((select version from snap), 0)
      order by kind, stream_version`,
    save: `insert into ${s}.snapshots (stream_id, version, state) values ($1, $2, $3)
      on conflict (stream_id) do update set version = excluded.version, state = excluded.state, taken_at = now()
      where snapshots.version < excluded.version`,
    dropByPrefix: `delete from ${s}.snapshots where starts_with(stream_id, $1)`,
    streamsByPrefix: `select stream_id, version from ${s}.streams where starts_with(stream_id, $1) and stream_id > $2 order by stream_id limit $3`,
  } as const;
}

export type SnapshotSql = ReturnType<typeof snapshotSql>;

export async function readStreamTail<State>(target: Queryable, sql: SnapshotSql, streamId: string): Promise<StreamTail<State>> {
  const { rows } = await target.query<EventRow & { kind: number }>(sql.tail, [streamId], { prepare: true });
  const first = rows[0];
  const snapshot = first?.kind === 0 ? { version: first.stream_version, state: first.data as State } : null;
  return { snapshot, events: (snapshot ? rows.slice(1) : rows).map(toRecordedEvent) };
}

export async function saveSnapshot(target: Queryable, sql: SnapshotSql, streamId: string, snapshot: Snapshot<unknown>): Promise<void> {
  await target.query(sql.save, [streamId, snapshot.version, JSON.stringify(snapshot.state)]);
}
