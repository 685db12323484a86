import type { Publisher } from '../brokers/message.js';
import { quoteSchema } from '../db/schema-name.js';
import type { Queryable } from '../db/database.js';
import { ValidationError } from '../errors.js';
import { parkedHoldKey, ParkedStreamReleasedError } from '../processing/parked-streams.js';
import { isAfter, loadCheckpoints } from '../processing/read-batch.js';
import { openRunnerSession } from '../processing/runner-session.js';
import { Counters } from '../processing/run-context.js';
import { PartitionLeases, partitionLockName } from '../processing/runners/partition-leases.js';
import { startLeasedLoop } from '../processing/runners/leased-loop.js';
import { processingSql, type ProcessingSql } from '../processing/sql.js';
import type { EventStore } from '../store/event-store.js';
import { publishBatch, type RelayCounter } from './publish-batch.js';
import { commitRelayBatch } from './relay-commit.js';
import { eventLogSource, outboxSource, type EventLogSelection, type RelaySource } from './relay-source.js';

export interface RelayOptions {
  store: EventStore<any>;
  publisher: Publisher;
  /** Relays of one name share the work; another name relays the same messages again (to another broker). @defaultValue 'outbox', or 'events' for a relay from the log */
  name?: string;
  /** Publish chosen events of the log instead of the outbox table. */
  events?: EventLogSelection;
  /** Aggregates are spread over this many partitions, shared by the relays of one name. Fixed per name. @defaultValue 8 */
  partitions?: number;
  /** Messages read per batch. @defaultValue 1000 */
  batchSize?: number;
  /** Publishes in flight at once. @defaultValue 256 */
  maxInFlight?: number;
  /** Refusals of one message before it is parked. @defaultValue 5 */
  maxAttempts?: number;
  /** Wait before retrying a refused message, doubling. @defaultValue 100 */
  retryDelayMs?: number;
  /** Longest wait for new messages when no notification arrives. @defaultValue 1000 */
  pollIntervalMs?: number;
  /** Wait after a failed batch (a broker or database outage), doubling up to `maxBackoffMs`. @defaultValue 100 */
  backoffMs?: number;
  /** @defaultValue 5000 */
  maxBackoffMs?: number;
  onError?: (err: unknown) => void;
}

export interface Relay {
  readonly runId: string;
  readonly partitions: readonly number[];
  /** This relay's counters since it started (persisted per run). */
  readonly counters: Counters<RelayCounter>;
  /** Stops after the current batch and releases its partitions. */
  stop(): Promise<void>;
  readonly done: Promise<void>;
}

const NAME = /^[a-z0-9][a-z0-9_.-]{0,99}$/;

export const relayRunId = (name: string) => `relay:${name}`;

async function registerRun(db: Queryable, sql: ProcessingSql, runId: string, name: string, source: RelaySource, count: number): Promise<void> {
  const { rows: existing } = await db.query<{ mode: string; source: string | null }>(sql.getRun, [runId]);
  const found = existing[0];
  if (found && (found.mode !== 'relay' || found.source !== source.name)) {
    throw new ValidationError('name', `relay ${name} already relays ${found.source ?? 'something else'}; choose another name`);
  }
  const { rows } = await db.query<{ partitions: number | null }>(sql.startRun, [runId, name, 'relay', false, '{}', null, null, null, null, null, source.name, count]);
  const fixed = rows[0]?.partitions;
  if (fixed !== null && fixed !== undefined && fixed !== count) throw new ValidationError('partitions', `relay ${name} has ${fixed} partitions, fixed when it first ran; pass ${fixed}`);
}

/**
 * Publishes the outbox (or chosen events of the log) to a broker, exactly in order per
 * aggregate and never skipping a message whose transaction committed late: it is a runner like
 * the live processors. Relays of one name share the aggregates through partition leases, keep a
 * checkpoint per partition (no per-row update when a message is published), park a message the
 * broker keeps refusing (holding back only its aggregate), and back off through outages.
 * Delivery is at least once: a crash between the broker's ack and the checkpoint republishes,
 * with the same message id.
 *
 * @example
 * ```ts
 * const relay = await runRelay({ store, publisher: createNatsPublisher({ url: 'nats://127.0.0.1:4222' }) })
 * // …
 * await relay.stop()
 * ```
 */
export async function runRelay(options: RelayOptions): Promise<Relay> {
  const { store, publisher } = options;
  const name = options.name ?? (options.events ? 'events' : 'outbox');
  if (!NAME.test(name)) throw new ValidationError('name', 'must be 1 to 100 lowercase letters, digits, dots, dashes or underscores');
  const count = options.partitions ?? 8;
  if (!Number.isInteger(count) || count < 1 || count > 1024) throw new ValidationError('partitions', 'must be an integer from 1 to 1024');
  const db = store.db;
  const sql = processingSql(quoteSchema(store.schema));
  const source = options.events ? eventLogSource(db, store.schema, options.events, store.decoder) : outboxSource(db, store.schema);
  const runId = relayRunId(name);
  const holdKey = parkedHoldKey(store.schema, runId);
  const settings = { publisher, maxInFlight: options.maxInFlight ?? 256, maxAttempts: options.maxAttempts ?? 5, retryDelayMs: options.retryDelayMs ?? 100 };
  const limit = options.batchSize ?? 1000;
  await registerRun(db, sql, runId, name, source, count);
  const runner = await openRunnerSession(db, sql);
  const leases = new PartitionLeases(runner, sql, partitionLockName(store.schema, runId), runId, count);
  const counters = new Counters<RelayCounter>();

  async function step(): Promise<boolean> {
    await leases.rebalance();
    const owned = [...leases.owned];
    if (owned.length === 0) return false;
    const checkpoints = await loadCheckpoints(db, sql, runId, owned);
    const after = [...checkpoints.values()].reduce((min, cp) => (isAfter(min, cp) ? cp : min));
    const [read, blockedRows] = await Promise.all([
      source.read(after, limit, { count, owned }),
      db.query<{ stream_id: string }>(sql.blockedStreams, [runId], { prepare: true }),
    ]);
    const last = read[read.length - 1];
    if (!last) return false;
    // A partition whose checkpoint is ahead of the others has published some of these already.
    const messages = read.filter((message) => isAfter(message, checkpoints.get(message.partition)!));
    const blocked = new Set(blockedRows.rows.map((row) => row.stream_id));
    const batch = await publishBatch(messages, blocked, settings);
    try {
      await commitRelayBatch({ db, sql, name, runId, holdKey }, { messages, batch, blocked, owned, last });
      for (const [counter, value] of batch.counters.entries()) counters.add(counter, value);
    } catch (err) {
      // A retry lifted a block this batch parked messages behind: read again (republishing, with the same ids).
      if (err instanceof ParkedStreamReleasedError) return true;
      throw err;
    }
    if (batch.interruption !== undefined) throw batch.interruption;
    return read.length === limit;
  }

  const pollIntervalMs = options.pollIntervalMs ?? 1000;
  const loop = await startLeasedLoop(runner, leases, {
    db,
    channels: [source.channel],
    pollIntervalMs,
    backoffMs: options.backoffMs ?? 100,
    maxBackoffMs: options.maxBackoffMs ?? 5000,
    step,
    onError: options.onError,
  });
  return {
    runId,
    get partitions() {
      return loop.partitions;
    },
    counters,
    stop: () => loop.stop(),
    done: loop.done,
  };
}
