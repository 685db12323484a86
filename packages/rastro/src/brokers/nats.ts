import { connect, errors, headers as natsHeaders, type NatsConnection } from '@nats-io/transport-node';
import { jetstream, jetstreamManager, JetStreamApiCodes, JetStreamApiError, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
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
  /**
   * Replicas of a stream this publisher creates: 1 on a single server, 3 on a three-node
   * cluster, so that losing a node loses neither the stream nor what it stores. An existing
   * stream keeps its own; one with fewer is reported through `onWarning`. @defaultValue 1
   */
  replicas?: number;
  /** Told what the operator should know and nothing stops for: an existing stream with fewer replicas than `replicas`. */
  onWarning?: (message: string) => void;
}

/** The broker's own verdict on this message: retrying it soon will be refused again. */
function isVerdict(err: unknown): boolean {
  if (err instanceof errors.InvalidSubjectError || err instanceof errors.InvalidArgumentError || err instanceof errors.PermissionViolationError) return true;
  // 4xx answers are about the message (too large, a wrong expected sequence); 408, 5xx and 503
  // ("JetStream system temporarily unavailable") are about the stream's state at the moment.
  return err instanceof JetStreamApiError && err.status >= 400 && err.status < 500 && err.status !== 408;
}

function isNoResponders(err: unknown): boolean {
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
  const replicas = options.replicas ?? 1;
  if (!Number.isInteger(replicas) || replicas < 1 || replicas > 5) throw new RangeError('replicas must be an integer from 1 to 5');
  type Open = { nc: NatsConnection; js: JetStreamClient; jsm: JetStreamManager };
  let connecting: Promise<Open> | undefined;
  let closed = false;
  const finding = new Map<string, Promise<unknown>>();

  async function open(): Promise<Open> {
    const nc = await connect({ servers: options.url.split(','), name: 'rastro-relay', maxReconnectAttempts: -1, reconnectTimeWait: 250, timeout });
    let jsm: JetStreamManager;
    try {
      jsm = await jetstreamManager(nc, { timeout });
      if (options.createStream ?? true) await ensureStream(jsm);
    } catch (err) {
      await nc.close();
      throw err;
    }
    // When the client gives up for good, the next publish connects anew.
    nc.closed().then(() => (connecting = undefined), () => (connecting = undefined));
    return { nc, js: jetstream(nc, { timeout }), jsm };
  }

  async function ensureStream(jsm: JetStreamManager): Promise<void> {
    try {
      const info = await jsm.streams.info(streamName);
      const has = info.config.num_replicas || 1;
      if (has < replicas) options.onWarning?.(`NATS stream ${streamName} has ${has} replica${has === 1 ? '' : 's'}, fewer than the ${replicas} configured (RASTRO_NATS_REPLICAS): losing the node that holds it stops publishing. Raise it with \`nats stream edit ${streamName} --replicas ${replicas}\`.`);
    } catch (err) {
      if (!(err instanceof JetStreamApiError) || err.status !== 404) throw err;
      await jsm.streams.add({ name: streamName, subjects: [`${prefix}.>`], num_replicas: replicas, duplicate_window: (options.duplicateWindowMs ?? 120_000) * 1_000_000 });
    }
  }

  /**
   * Why a publish failed, as the relay must act on it. Nothing answers a publish both when no
   * stream captures its subject (a refusal: park it) and when the stream that does is between
   * leaders, its node down or electing one (an outage: wait, and publish again with the same
   * id). JetStream's metadata layer tells the two apart: it knows which stream captures a
   * subject while that stream has no leader. When it cannot be asked either, that is an outage.
   */
  async function failure(err: unknown, subject: string, jsm: JetStreamManager): Promise<Error> {
    if (isVerdict(err)) return new PublishRejectedError(`NATS refused the message: ${(err as Error).message}`, { cause: err });
    if (!isNoResponders(err)) return err instanceof Error ? err : new Error(String(err));
    // Publishes in flight fail together: they share one question per subject.
    let asking = finding.get(subject);
    if (!asking) {
      asking = jsm.streams.find(subject).catch((findErr: unknown) => findErr).finally(() => finding.delete(subject));
      finding.set(subject, asking);
    }
    const stream = await asking;
    if (stream instanceof JetStreamApiError && stream.code === JetStreamApiCodes.StreamNotFound) return new PublishRejectedError(`NATS refused the message: no stream captures subject ${subject}`, { cause: err });
    const which = typeof stream === 'string' ? `stream ${stream}` : 'the stream';
    return new Error(`NATS JetStream did not answer for ${which} (subject ${subject}): its node is down or it is electing a leader`, { cause: err });
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
      const { js, jsm } = await connection();
      const h = natsHeaders();
      for (const [name, value] of Object.entries(wireHeaders(message))) h.set(name, value);
      const subject = subjectOf(message);
      annotateActiveSpan({ 'messaging.destination.name': subject });
      try {
        const ack = await js.publish(subject, encodeBody(message), { msgID: message.id, headers: h, timeout });
        return { duplicate: ack.duplicate };
      } catch (err) {
        throw await failure(err, subject, jsm);
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
