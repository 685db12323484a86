import { quoteSchema } from '../db/schema-name.js';
import { ValidationError } from '../errors.js';
import type { EventStore } from '../store/event-store.js';

/** A row of processor state, as `ctx.upsert` wrote it. */
export interface ProjectionRow<Doc = Record<string, unknown>> {
  key: string;
  doc: Doc;
  /** The version guard's value, or null for a recency-guarded row. */
  version: number | null;
  /** The recency guard's reference, or null. */
  observedAt: Date | null;
  /** The event whose handler wrote the row. */
  eventId: string | null;
  updatedAt: Date;
}

interface Row {
  key: string;
  doc: Record<string, unknown>;
  version: number | null;
  observed_at: Date | null;
  event_id: string | null;
  updated_at: Date;
}

const MAX_LIST = 1000;

function projectionSql(s: string) {
  const columns = 'key, doc, version, observed_at, event_id, updated_at';
  return {
    get: `select ${columns} from ${s}.projections where projection = $1 and key = $2`,
    list: `select ${columns} from ${s}.projections where projection = $1 and key > $2 order by key limit $3`,
  } as const;
}

const toRow = <Doc>(row: Row): ProjectionRow<Doc> => ({
  key: row.key,
  doc: row.doc as Doc,
  version: row.version === null ? null : Number(row.version),
  observedAt: row.observed_at,
  eventId: row.event_id,
  updatedAt: row.updated_at,
});

function validateName(name: unknown): string {
  if (typeof name !== 'string' || name.length === 0) throw new ValidationError('projection', 'must be a non-empty string');
  return name;
}

/**
 * Reads the state processors write, without SQL: one row by key, or a page of rows in key order.
 *
 * @example
 * ```ts
 * const order = await projections(store).get('order', 'pied:260065713')
 * const page = await projections(store).list('order', { after: '', limit: 100 })
 * ```
 */
export function projections(store: EventStore<any>) {
  const sql = projectionSql(quoteSchema(store.schema));
  return {
    async get<Doc = Record<string, unknown>>(name: string, key: string): Promise<ProjectionRow<Doc> | undefined> {
      if (typeof key !== 'string' || key.length === 0) throw new ValidationError('key', 'must be a non-empty string');
      const { rows } = await store.db.query<Row>(sql.get, [validateName(name), key]);
      return rows[0] ? toRow<Doc>(rows[0]) : undefined;
    },
    /** Rows whose key sorts after `after` (default: from the first), at most `limit` (1 to 1000, default 100). */
    async list<Doc = Record<string, unknown>>(name: string, options: { after?: string; limit?: number } = {}): Promise<ProjectionRow<Doc>[]> {
      const limit = options.limit ?? 100;
      if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_LIST) throw new ValidationError('limit', `must be an integer from 1 to ${MAX_LIST}`);
      if (options.after !== undefined && typeof options.after !== 'string') throw new ValidationError('after', 'must be a string');
      const { rows } = await store.db.query<Row>(sql.list, [validateName(name), options.after ?? '', limit]);
      return rows.map((row) => toRow<Doc>(row));
    },
  };
}

export type Projections = ReturnType<typeof projections>;
