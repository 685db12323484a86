import { connect, errors, headers as natsHeaders, type NatsConnection } from '@nats-io/transport-node';
import { jetstream, jetstreamManager, JetStreamApiError, type JetStreamClient } from '@nats-io/jetstream';
import { annotateActiveSpan } from '../observability/tracing.js';
import { encodeBody, PublishRejectedError, wireHeaders, withinTimeout, type BrokerMessage, type PublishAck, type Publisher } from './message.js';

export interface NatsPublisherOptions {
  /** `nats://host:port`; several servers separated by commas. */
  url: string;
  /** Subjects are `<prefix>.<aggregateType>.<type>`. @defaultValue 'rastro' */
  subjectPrefix?: string;
  /** Overrides the subject of each message. */
  subject?: (message: BrokerMessage) => string;
  /** The stream that captures `<prefix>.>`, created when missing. @defaultValue 'RASTRO' */
  stream?: string;
  /** Create the stream when it does not exist. @defaultValue true */
  createStream?: boolean;
  /**
   * The stream's duplicate window, for a stream this publisher creates: a message id seen again
   * within it is acknowledged as a duplicate and not stored twice. It must cover the longest a
   * relay may take to republish after a crash (its restart); consumers that must never see a
   * duplicate deduplicate by id beyond it (the inbox does, forever). @defaultValue 2 minutes
   */
  duplicateWindowMs?: number;
  /** How long to wait for a PubAck. @defaultValue 5000 */
  ackTimeoutMs?: number;
}

/** Errors that are about this message, not about the connection: retrying soon will not help. */
function isRejection(err: unknown): boolean {
  if (err instanceof JetStreamApiError) return true;
  if (err instanceof errors.InvalidSubjectError || err instanceof errors.InvalidArgumentError || err instanceof errors.PermissionViolationError) return true;
  // No stream captures the subject: nothing answers a publish to it. (JetStream itself answered
  // when the publisher connected and checked its stream.)
  for (let e: unknown = err; e instanceof Error; e = e.cause) {
    if (e instanceof errors.NoRespondersError || /no responders/i.test(e.message)) return true;
  }
  return false;
}

/**
 * Publishes to NATS JetStream through the official client: `msgID` is the message id, and a
 * publish resolves on the PubAck (a `duplicate: true` ack counts as published). Connects on first
 * use and reconnects on its own; a publish during an outage fails after `ackTimeoutMs`, and the
 * relay backs off.
 *
 * @example
 * ```ts
 * const publisher = createNatsPublisher({ url: 'nats://127.0.0.1:4222' })
 * await runRelay({ store, publisher })
 * ```
 */
export function createNatsPublisher(options: NatsPublisherOptions): Publisher {
  const prefix = options.subjectPrefix ?? 'rastro';
  const streamName = options.stream ?? 'RASTRO';
  const timeout = options.ackTimeoutMs ?? 5000;
  const subjectOf = options.subject ?? ((message: BrokerMessage) => `${prefix}.${message.aggregateType}.${message.type}`);
  let connecting: Promise<{ nc: NatsConnection; js: JetStreamClient }> | undefined;
  let closed = false;

  async function open(): Promise<{ nc: NatsConnection; js: JetStreamClient }> {
    const nc = await connect({ servers: options.url.split(','), name: 'rastro-relay', maxReconnectAttempts: -1, reconnectTimeWait: 250, timeout });
    try {
      if (options.createStream ?? true) await ensureStream(nc);
    } catch (err) {
      await nc.close();
      throw err;
    }
    // When the client gives up for good, the next publish connects anew.
    nc.closed().then(() => (connecting = undefined), () => (connecting = undefined));
    return { nc, js: jetstream(nc, { timeout }) };
  }

  async function ensureStream(nc: NatsConnection): Promise<void> {
    const jsm = await jetstreamManager(nc, { timeout });
    try {
      await jsm.streams.info(streamName);
    } catch (err) {
      if (!(err instanceof JetStreamApiError) || err.status !== 404) throw err;
      await jsm.streams.add({ name: streamName, subjects: [`${prefix}.>`], duplicate_window: (options.duplicateWindowMs ?? 120_000) * 1_000_000 });
    }
  }

  function connection() {
    if (closed) throw new Error('the NATS publisher is closed');
    connecting ??= open();
    connecting.catch(() => (connecting = undefined));
    return connecting;
  }

  return {
    kind: 'nats',
    async publish(message: BrokerMessage): Promise<PublishAck> {
      const { js } = await connection();
      const h = natsHeaders();
      for (const [name, value] of Object.entries(wireHeaders(message))) h.set(name, value);
      try {
        const subject = subjectOf(message);
        annotateActiveSpan({ 'messaging.destination.name': subject });
        const ack = await js.publish(subject, encodeBody(message), { msgID: message.id, headers: h, timeout });
        return { duplicate: ack.duplicate };
      } catch (err) {
        if (isRejection(err)) throw new PublishRejectedError(`NATS refused the message: ${(err as Error).message}`, { cause: err });
        throw err;
      }
    },
    async ping(timeoutMs = 2000) {
      // A flush is a round trip to the server: it waits while the client is reconnecting.
      await withinTimeout(connection().then(({ nc }) => nc.flush()), timeoutMs, 'NATS');
    },
    async close() {
      closed = true;
      const open = await connecting?.catch(() => undefined);
      await open?.nc.close();
    },
  };
}
