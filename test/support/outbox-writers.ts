import type { Database } from '../../packages/rastro/src/db/database.js';
import { createOutbox } from '../../packages/rastro/src/outbox/outbox.js';
import { createEventStore, type EventStore } from '../../packages/rastro/src/store/event-store.js';
import { freshSchema, type Backend } from './databases.js';

export interface WriterOptions {
  aggregates: number;
  /** Stop once this many messages committed. */
  messages: number;
  writers: number;
  /** Share of transactions held open for 1–3 s before they commit. */
  heldOpen?: number;
  /** Share of transactions that take their transaction id first, then wait a little before writing. */
  earlyId?: number;
  /** Share of transactions rolled back after writing. */
  rollback?: number;
  /** Most messages per transaction. */
  perTransaction?: number;
  /** A writer's pause between transactions, to spread the messages over time. @defaultValue 0 */
  paceMs?: number;
}

/**
 * Concurrent writers whose transactions commit out of order: each message carries its
 * aggregate's sequence number, taken in the same transaction from a counter row, so commit order
 * per aggregate is 1, 2, 3… with no gaps (a rolled-back transaction rolls its numbers back).
 */
export async function runWriters(db: Database, schema: string, options: WriterOptions): Promise<{ committed: number; stop(): void; done: Promise<number> }> {
  const outbox = createOutbox(db, { schema });
  await db.query(`create table if not exists "${schema}".test_sequences (aggregate text primary key, n int not null)`);
  const state = { committed: 0, stopped: false };
  const perTx = options.perTransaction ?? 10;
  const pick = () => Math.floor(Math.random() * options.aggregates);

  async function transaction(): Promise<void> {
    const size = 1 + Math.floor(Math.random() * perTx);
    const aggregates = [...new Set(Array.from({ length: size }, pick))].sort((a, b) => a - b).map((a) => `a${String(a).padStart(4, '0')}`);
    const roll = Math.random();
    const rollback = roll < (options.rollback ?? 0);
    const held = !rollback && roll < (options.rollback ?? 0) + (options.heldOpen ?? 0);
    try {
      await db.transaction(async (tx) => {
        if (Math.random() < (options.earlyId ?? 0)) {
          await tx.query('select pg_current_xact_id()');
          await new Promise((resolve) => setTimeout(resolve, Math.random() * 30));
        }
        for (const aggregate of aggregates) {
          const { rows } = await tx.query<{ n: number }>(
            `insert into "${schema}".test_sequences (aggregate, n) values ($1, 1) on conflict (aggregate) do update set n = test_sequences.n + 1 returning n`, [aggregate]);
          await outbox.write(tx, { aggregateType: 'order', aggregateId: aggregate, type: 'OrderChanged', payload: { aggregate, n: rows[0]!.n } });
        }
        if (held) await new Promise((resolve) => setTimeout(resolve, 1000 + Math.random() * 2000));
        if (rollback) throw new Error('rolled back on purpose');
      });
      state.committed += aggregates.length;
    } catch (err) {
      if (!rollback) throw err;
    }
  }

  async function writer(): Promise<void> {
    while (!state.stopped && state.committed < options.messages) {
      await transaction();
      if (options.paceMs) await new Promise((resolve) => setTimeout(resolve, options.paceMs));
    }
  }
  const done = Promise.all(Array.from({ length: options.writers }, writer)).then(() => state.committed);
  return {
    get committed() {
      return state.committed;
    },
    stop: () => void (state.stopped = true),
    done,
  };
}

/** Checks what a consumer received: every committed message (by id, duplicates allowed), each aggregate in commit order. */
export function checkDelivery(received: { id: string; aggregate: string; n: number }[], expected: Map<string, number>): { unique: number; duplicates: number; problems: string[] } {
  const seen = new Set<string>();
  const next = new Map<string, number>();
  const problems: string[] = [];
  let duplicates = 0;
  for (const { id, aggregate, n } of received) {
    if (seen.has(id)) {
      duplicates++;
      continue;
    }
    seen.add(id);
    const want = (next.get(aggregate) ?? 0) + 1;
    if (n !== want && problems.length < 10) problems.push(`${aggregate}: got ${n} where ${want} was next`);
    next.set(aggregate, n);
  }
  for (const [aggregate, last] of expected) {
    if ((next.get(aggregate) ?? 0) !== last && problems.length < 20) problems.push(`${aggregate}: last delivered ${next.get(aggregate) ?? 0}, committed ${last}`);
  }
  return { unique: seen.size, duplicates, problems };
}

/** A fresh store whose outbox holds these messages (aggregate type `order`), one transaction each. */
export async function storeWithMessages(backend: Backend, messages: { aggregateId: string; type?: string; n: number }[]): Promise<EventStore> {
  const { db, schema } = await freshSchema(backend);
  const store = createEventStore(db, { schema });
  const outbox = createOutbox(db, { schema });
  for (const { aggregateId, type, n } of messages) {
    await db.transaction((tx) => outbox.write(tx, { aggregateType: 'order', aggregateId, type: type ?? 'OrderChanged', payload: { n } }));
  }
  return store;
}
