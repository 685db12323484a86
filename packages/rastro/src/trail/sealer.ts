import type { Queryable } from '../db/database.js';
import { quoteSchema } from '../db/schema-name.js';
import { int8 } from '../db/values.js';
import { ValidationError } from '../errors.js';
import { openRunnerSession } from '../processing/runner-session.js';
import { PartitionLeases, partitionLockName } from '../processing/runners/partition-leases.js';
import { startLeasedLoop } from '../processing/runners/leased-loop.js';
import { processingSql } from '../processing/sql.js';
import type { EventStore } from '../store/event-store.js';
import { blockHash, GENESIS, type BlockHeader } from './block.js';
import { merkleRoot } from './merkle.js';
import { trailSql, type TrailSql } from './sql.js';

export interface SealerOptions {
  store: EventStore<any>;
  /** How often it seals what committed since. @defaultValue 1000 */
  intervalMs?: number;
  /** Most events in one block. @defaultValue 10000 */
  maxEvents?: number;
  /** Called when a step fails; the sealer backs off and tries again. */
  onError?: (err: unknown) => void;
}

export interface Sealer {
  /** Blocks this sealer sealed since it started. */
  readonly sealed: { blocks: number; events: number };
  stop(): Promise<void>;
  readonly done: Promise<void>;
}

/** A block as the trail_blocks table holds it. */
export interface StoredBlock extends BlockHeader {
  hash: string;
  sealedAt: Date;
}

type BlockRow = {
  block: unknown; first_tx_order: unknown; first_position: unknown; last_tx_order: unknown; last_position: unknown; events: unknown;
  root: string; prev: string; hash: string; sealed_at: Date;
};

export function toBlock(row: BlockRow): StoredBlock {
  return {
    block: int8(row.block), firstTxOrder: int8(row.first_tx_order), firstPosition: int8(row.first_position), lastTxOrder: int8(row.last_tx_order),
    lastPosition: int8(row.last_position), events: int8(row.events), root: row.root, prev: row.prev, hash: row.hash, sealedAt: row.sealed_at,
  };
}

export async function lastBlock(db: Queryable, sql: TrailSql): Promise<StoredBlock | undefined> {
  const row = (await db.query<BlockRow>(sql.lastBlock)).rows[0];
  return row && toBlock(row);
}

/**
 * Seals the next block: the events after the last block, in global commit order, below the
 * no-skip frontier, at most `maxEvents`. Resolves with how many it sealed (0: nothing to seal).
 */
export async function sealNext(db: Queryable, sql: TrailSql, maxEvents: number): Promise<number> {
  const last = await lastBlock(db, sql);
  const { rows } = await db.query<{ position: unknown; tx_order: unknown; link: Buffer | null }>(sql.toSeal, [last?.lastTxOrder ?? 0, last?.lastPosition ?? 0, maxEvents]);
  if (rows.length === 0) return 0;
  const missing = rows.find((row) => row.link === null);
  // Every event has a link from its append (or from migration 0019); one without cannot be sealed.
  if (missing) throw new Error(`event at position ${String(missing.position)} has no hash: it was not appended by rastro; run rastro verify --full`);
  const first = rows[0]!;
  const end = rows[rows.length - 1]!;
  const header: BlockHeader = {
    block: (last?.block ?? 0) + 1,
    firstTxOrder: int8(first.tx_order), firstPosition: int8(first.position),
    lastTxOrder: int8(end.tx_order), lastPosition: int8(end.position),
    events: rows.length,
    root: merkleRoot(rows.map((row) => row.link!)).toString('hex'),
    prev: last?.hash ?? GENESIS,
  };
  const hash = blockHash(header);
  const inserted = await db.query(sql.insertBlock, [header.block, header.firstTxOrder, header.firstPosition, header.lastTxOrder, header.lastPosition, header.events, header.root, header.prev, hash]);
  return inserted.rowCount > 0 ? rows.length : 0;
}

/**
 * Seals the log into blocks as it grows: a runner like the others, reading on the no-skip
 * frontier, one sealer at a time through a lease (any number may run; one seals, the others
 * stand by and take over the moment its connection ends). A sealer killed between reading and
 * inserting leaves nothing; the next one seals the same events again.
 *
 * @example
 * ```ts
 * const sealer = await startSealer({ store })
 * // …
 * await sealer.stop()
 * ```
 */
export async function startSealer(options: SealerOptions): Promise<Sealer> {
  const { store } = options;
  const intervalMs = options.intervalMs ?? 1000;
  const maxEvents = options.maxEvents ?? 10_000;
  if (!Number.isInteger(maxEvents) || maxEvents < 1 || maxEvents > 100_000) throw new ValidationError('maxEvents', 'must be an integer from 1 to 100000');
  const db = store.db;
  const sql = trailSql(quoteSchema(store.schema));
  const runnerSql = processingSql(quoteSchema(store.schema));
  const group = 'trail:sealer';
  const runner = await openRunnerSession(db, runnerSql);
  const leases = new PartitionLeases(runner, runnerSql, partitionLockName(store.schema, group), group, 1);
  const sealed = { blocks: 0, events: 0 };
  const loop = await startLeasedLoop(runner, leases, {
    db,
    channels: [],
    pollIntervalMs: intervalMs,
    backoffMs: intervalMs,
    maxBackoffMs: 30_000,
    async step() {
      await leases.rebalance();
      if (leases.owned.size === 0) return false;
      const events = await sealNext(db, sql, maxEvents);
      if (events > 0) {
        sealed.blocks++;
        sealed.events += events;
      }
      return events === maxEvents;
    },
    onError: options.onError,
  });
  return { sealed, stop: () => loop.stop(), done: loop.done };
}
