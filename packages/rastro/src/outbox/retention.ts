import { quoteSchema } from '../db/schema-name.js';
import { ValidationError } from '../errors.js';
import type { EventStore } from '../store/event-store.js';
import { outboxSql } from './sql.js';

export interface RetentionOptions {
  /** Published messages older than this many days are deleted. @defaultValue 7 */
  days?: number;
  /** Rows deleted per statement, so no statement holds locks for long. @defaultValue 5000 */
  batchSize?: number;
  /** Called after each batch with the running total. */
  onProgress?: (deleted: number) => void;
}

const DAY_MS = 86_400_000;

/** How often `serve` runs retention: a published message may outlive its days by this much. */
export const RETENTION_INTERVAL_MS = 60 * 60 * 1000;

function validateDays(days: unknown): number {
  if (!Number.isInteger(days) || (days as number) < 0 || (days as number) > 36_500) throw new ValidationError('days', 'must be a whole number of days from 0 to 36500');
  return days as number;
}

/** `outbox_p20261201`: the daily partition holding that UTC day's messages. */
const partitionName = (day: Date) => `outbox_p${day.toISOString().slice(0, 10).replace(/-/g, '')}`;
const PARTITION = /^outbox_p(\d{4})(\d{2})(\d{2})$/;

/**
 * Retention for the outbox: a published message is waste after a few days. Deletes, in bounded
 * batches, messages older than `days` that every outbox relay has published (behind its
 * checkpoint and not parked); nothing is deleted before a relay has run. With daily partitions
 * (for high volume: `ensureDailyPartitions`), whole days are dropped instead of rows deleted.
 *
 * @example
 * ```ts
 * const retention = outboxRetention(store)
 * await retention.deletePublished({ days: 7 })
 * ```
 */
export function outboxRetention(store: EventStore<any>) {
  const s = quoteSchema(store.schema);
  const sql = outboxSql(s);
  const db = store.db;

  async function deletePublished(options: RetentionOptions = {}): Promise<number> {
    const days = validateDays(options.days ?? 7);
    const batchSize = options.batchSize ?? 5000;
    let total = 0;
    for (;;) {
      const { rowCount } = await db.query(sql.deletePublished, [days, batchSize]);
      total += rowCount;
      options.onProgress?.(total);
      if (rowCount < batchSize) break;
    }
    while ((await db.query(sql.deleteSettledAggregates, [batchSize])).rowCount === batchSize);
    return total;
  }

  async function dailyPartitions(): Promise<{ name: string; day: Date }[]> {
    const { rows } = await db.query<{ name: string }>(
      `select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid join pg_class p on p.oid = i.inhparent
        join pg_namespace n on n.oid = p.relnamespace where n.nspname = $1 and p.relname = 'outbox' order by 1`, [store.schema]);
    return rows.flatMap(({ name }) => {
      const m = PARTITION.exec(name);
      return m ? [{ name, day: new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]))) }] : [];
    });
  }

  return {
    deletePublished,
    /**
     * Creates the daily partitions of the next `daysAhead` days (from tomorrow, UTC) that do not
     * exist yet: from then on each day's messages land in a table of their own. Today's stay in
     * the default partition, which holds rows of any day and is cleaned by `deletePublished`.
     */
    async ensureDailyPartitions(options: { daysAhead?: number } = {}): Promise<string[]> {
      const ahead = options.daysAhead ?? 3;
      const existing = new Set((await dailyPartitions()).map((p) => p.name));
      const created: string[] = [];
      const today = Math.floor(Date.now() / DAY_MS) * DAY_MS;
      for (let i = 1; i <= ahead; i++) {
        const from = new Date(today + i * DAY_MS);
        const name = partitionName(from);
        if (existing.has(name)) continue;
        const to = new Date(from.getTime() + DAY_MS);
        await db.query(`create table if not exists ${s}."${name}" partition of ${s}.outbox for values from ('${from.toISOString()}') to ('${to.toISOString()}')`);
        created.push(name);
      }
      return created;
    },
    /**
     * Drops whole daily partitions whose day ended more than `days` ago, once every message in
     * them is published; a partition still holding an unpublished message is kept and named in
     * `kept`.
     */
    async dropExpiredPartitions(options: { days?: number } = {}): Promise<{ dropped: string[]; kept: string[] }> {
      const days = validateDays(options.days ?? 7);
      const dropped: string[] = [];
      const kept: string[] = [];
      for (const { name, day } of await dailyPartitions()) {
        if (day.getTime() + DAY_MS > Date.now() - days * DAY_MS) continue;
        const { rows } = await db.query<{ unpublished: boolean }>(sql.holdsUnpublished(`${s}."${name}"`));
        if (rows[0]?.unpublished) kept.push(name);
        else {
          await db.query(`drop table ${s}."${name}"`);
          dropped.push(name);
        }
      }
      return { dropped, kept };
    },
  };
}
