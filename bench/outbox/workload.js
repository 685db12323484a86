// The outbox workload: messages over aggregates, the same size for the raw loop and the relay.
import { connect } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { outboxChannel } from 'rastro';

export const OUTBOX = {
  messages: 20_000,
  aggregates: 500,
  inFlight: 256,
  /** Steady write rate of the latency row, and how long it is held. */
  rate: 1_000,
  latencySeconds: 10,
};

export const NATS_URL = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';

/** A payload of about 200 bytes, as a small domain event. */
export const payloadOf = (i) => ({ orderId: `o${i}`, amountCents: 10_000 + (i % 1000), status: 'paid', note: 'x'.repeat(120) });

/**
 * The rows outbox.write would write, `messages` over `aggregates`, by SQL in one transaction,
 * with what outbox.write does at commit: wake the relays.
 */
export async function fillOutbox(db, schema, { messages, aggregates }) {
  await db.transaction(async (tx) => {
    await tx.query(`insert into ${schema}.outbox_aggregates (aggregate_type, aggregate_id, tx_order)
      select 'order', 'a' || g, pg_current_xact_id()::text::bigint from generate_series(0, $1 - 1) g on conflict do nothing`, [aggregates]);
    await tx.query(`insert into ${schema}.outbox (tx_order, id, aggregate_type, aggregate_id, type, payload)
      select pg_current_xact_id()::text::bigint, gen_random_uuid(), 'order', 'a' || (g % $2), 'OrderChanged',
             jsonb_build_object('orderId', 'o' || g, 'amountCents', 10000 + g % 1000, 'status', 'paid', 'note', repeat('x', 120))
        from generate_series(0, $1 - 1) g`, [messages, aggregates]);
    await tx.query('select pg_notify($1, $2)', [outboxChannel(schema), '']);
  });
}

/** A fresh JetStream stream for one contender run, and its removal. */
export async function freshStream(name, subjects) {
  const nc = await connect({ servers: NATS_URL });
  const jsm = await jetstreamManager(nc);
  await jsm.streams.delete(name).catch(() => undefined);
  await jsm.streams.add({ name, subjects, duplicate_window: 120e9 });
  return {
    nc,
    async count() {
      return (await jsm.streams.info(name)).state.messages;
    },
    async remove() {
      await jsm.streams.delete(name).catch(() => undefined);
      await nc.close();
    },
  };
}

/** Whether a NATS server answers: the section needs one. */
export async function natsReachable() {
  try {
    const nc = await connect({ servers: NATS_URL, timeout: 2000, reconnect: false });
    await nc.close();
    return undefined;
  } catch (err) {
    return `no NATS server at ${NATS_URL} (${err.message}); start one with JetStream or set NATS_URL`;
  }
}
