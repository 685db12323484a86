import type { Queryable } from '../db/database.js';
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
}

/** Snapshot statements for one schema (`s` validated and quoted). */
export function snapshotSql(s: string) {
  return {
    /**
     * One round trip: the snapshot row (kind 0), then the events after it with only what a fold
     * needs. The constant upper bound keeps the planner on the primary key: with the lower bound
     * alone it cannot know how many versions follow the snapshot and may scan the whole stream.
     */
    tail: `with snap as (select version, state from ${s}.snapshots where stream_id = $1)
      select 0 as kind, version as stream_version, null::text as type, state as data, null::timestamptz as occurred_at
        from snap
      union all
      select 1, stream_version, type, data, occurred_at
        from ${s}.events
       where stream_id = $1 and stream_version > coalesce((select version from snap), 0) and stream_version <= 9007199254740991
      order by kind, stream_version`,
    /**
     * `tail` for a reader that holds the stream's state at version $2: the snapshot only when it is
     * newer, and the events after the later of the two (none, usually: one index probe).
     */
    tailAfter: `with snap as (select version, state from ${s}.snapshots where stream_id = $1 and version > $2)
      select 0 as kind, version as stream_version, null::text as type, state as data, null::timestamptz as occurred_at
        from snap
      union all
      select 1, stream_version, type, data, occurred_at
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

/** The stream's latest snapshot and the events after it; with `afterVersion`, only what is newer than that version. */
export async function readStreamTail<State>(target: Queryable, sql: SnapshotSql, streamId: string, afterVersion?: number): Promise<StreamTail<State>> {
  const { rows } = await target.query<{ kind: number; stream_version: number; type: string; data: Record<string, unknown>; occurred_at: Date }>(
    afterVersion === undefined ? sql.tail : sql.tailAfter,
    afterVersion === undefined ? [streamId] : [streamId, afterVersion],
    { prepare: true },
  );
  const first = rows[0];
  const snapshot = first?.kind === 0 ? { version: first.stream_version, state: first.data as State } : null;
  const events = (snapshot ? rows.slice(1) : rows).map((row) => ({ streamVersion: row.stream_version, type: row.type, data: row.data, occurredAt: row.occurred_at }));
  return { snapshot, events };
}

export async function saveSnapshot(target: Queryable, sql: SnapshotSql, streamId: string, snapshot: Snapshot<unknown>): Promise<void> {
  await target.query(sql.save, [streamId, snapshot.version, JSON.stringify(snapshot.state)]);
}
