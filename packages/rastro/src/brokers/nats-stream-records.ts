import { connect } from '@nats-io/transport-node';
import { DeliverPolicy, jetstream, jetstreamManager } from '@nats-io/jetstream';

/** A message the stream stores: its `Nats-Msg-Id` (the relay's message id), subject and time. */
export interface StreamRecord {
  id: string;
  subject: string;
  storedAt: Date;
  /** The inbox's durable acknowledged it: the log should hold it as an event. */
  acknowledged: boolean;
}

/**
 * Reads back the ids of the messages a JetStream stream stored since `since`, with an ordered
 * consumer that reads headers only and leaves no durable behind: what `rastro audit
 * --ask-providers` compares with the outbox and the log. With `inboxDurable`, each says whether
 * that durable (the inbox's) acknowledged it. Stops at the stream's last message as it was when
 * reading began.
 *
 * @example
 * ```ts
 * for await (const m of streamRecords({ url: 'nats://127.0.0.1:4222', stream: 'RASTRO', since })) console.log(m.id)
 * ```
 */
export async function* streamRecords(options: { url: string; stream: string; since: Date; inboxDurable?: string; timeoutMs?: number }): AsyncGenerator<StreamRecord> {
  const timeout = options.timeoutMs ?? 5000;
  const nc = await connect({ servers: options.url.split(','), name: 'rastro-audit', timeout });
  try {
    const jsm = await jetstreamManager(nc, { timeout });
    const last = (await jsm.streams.info(options.stream)).state.last_seq;
    // Everything at or below the inbox durable's acknowledgement floor was acknowledged by the inbox.
    const durable = options.inboxDurable ? await jsm.consumers.info(options.stream, options.inboxDurable).catch(() => undefined) : undefined;
    const floor = durable?.ack_floor.stream_seq ?? 0;
    const consumer = await jetstream(nc, { timeout }).consumers.get(options.stream, {
      deliver_policy: DeliverPolicy.StartTime, opt_start_time: options.since.toISOString(), headers_only: true,
    });
    for (;;) {
      let got = 0;
      for await (const m of await consumer.fetch({ max_messages: 1000, expires: 2000 })) {
        got++;
        const id = m.headers?.get('Nats-Msg-Id');
        if (id) yield { id, subject: m.subject, storedAt: new Date(Math.floor(m.info.timestampNanos / 1_000_000)), acknowledged: m.seq <= floor };
        if (m.seq >= last) return;
      }
      if (got === 0) return;
    }
  } finally {
    await nc.close();
  }
}
