import { once } from 'node:events';
import type { ChannelModel, ConfirmChannel } from 'amqplib';
import { annotateActiveSpan } from '../observability/tracing.js';
import { amqpNodes } from './amqp-nodes.js';
import { encodeBody, PublishRejectedError, wireHeaders, withinTimeout, type BrokerMessage, type PublishAck, type Publisher } from './message.js';

export interface AmqpPublisherOptions {
  /**
   * `amqp://user:pass@host:port/vhost`; the nodes of a cluster separated by commas, tried in
   * turn: a lost connection reconnects to the next node that answers.
   */
  url: string;
  /** @defaultValue 'rastro' */
  exchange?: string | ((message: BrokerMessage) => string);
  /** Exchanges rastro declares are durable topic exchanges. @defaultValue true */
  declareExchange?: boolean;
  /** @defaultValue `<aggregateType>.<type>` */
  routingKey?: (message: BrokerMessage) => string;
  /** How long to wait for a publisher confirm. @defaultValue 5000 */
  confirmTimeoutMs?: number;
}

interface Open {
  connection: ChannelModel;
  channel: ConfirmChannel;
  exchanges: Set<string>;
  /**
   * Why the broker returned a message, by message id, until its confirm arrives: RabbitMQ sends
   * `basic.return` for an unroutable mandatory message before confirming it, on the same channel.
   */
  returned: Map<string, string>;
}

/**
 * Publishes to RabbitMQ through `amqplib` on a confirm channel: persistent, `mandatory` messages
 * with `messageId` set, each publish resolved by the broker's confirm. An exchange that does not
 * exist, or a message the broker returns because no queue is bound for its routing key (which it
 * would otherwise confirm and drop) is a refusal of that message: the relay retries it, then
 * parks it. A nack (a queue's node died with the message unconfirmed, or the queue is full) and
 * a lost connection (the node that took a publish died before confirming it) are outages, never
 * refusals: the relay backs off and publishes again with the same message id, and the next
 * publish reconnects, to the next node of the list.
 *
 * @example
 * ```ts
 * const publisher = createAmqpPublisher({ url: 'amqp://guest:guest@127.0.0.1:5672' })
 * await runRelay({ store, publisher })
 * ```
 */
export function createAmqpPublisher(options: AmqpPublisherOptions): Publisher {
  const exchangeOf = typeof options.exchange === 'function' ? options.exchange : () => (options.exchange as string | undefined) ?? 'rastro';
  const routingKeyOf = options.routingKey ?? ((message: BrokerMessage) => `${message.aggregateType}.${message.type}`);
  const timeoutMs = options.confirmTimeoutMs ?? 5000;
  const nodes = amqpNodes(options.url);
  let opening: Promise<Open> | undefined;
  let opened = 0;
  let closed = false;

  async function open(): Promise<Open> {
    const mine = ++opened;
    const connection = await nodes.connect();
    // Only the newest connection is the publisher's: an older one closing late (its close comes
    // after its channel's, which already let a publish open the next) must not drop the newer.
    const newest = () => opened === mine;
    const forget = () => {
      if (newest()) opening = undefined;
    };
    connection.on('error', () => undefined);
    connection.on('close', () => {
      forget();
      nodes.lost();
    });
    const channel = await connection.createConfirmChannel().catch(async (err: unknown) => {
      await connection.close().catch(() => undefined);
      throw err;
    });
    const returned = new Map<string, string>();
    channel.on('return', (m: { fields: { replyCode: number; replyText: string; exchange: string; routingKey: string }; properties: { messageId?: string } }) => {
      const id = m.properties.messageId;
      if (id) returned.set(id, `RabbitMQ returned the message: no queue is bound to exchange ${JSON.stringify(m.fields.exchange)} for routing key ${JSON.stringify(m.fields.routingKey)} (${m.fields.replyCode} ${m.fields.replyText})`);
    });
    // A channel the server closed (an unknown exchange): the next publish opens another.
    channel.on('error', () => undefined);
    channel.on('close', () => {
      forget();
      connection.close().catch(() => undefined);
    });
    return { connection, channel, exchanges: new Set(), returned };
  }

  function current(): Promise<Open> {
    if (closed) throw new Error('the RabbitMQ publisher is closed');
    opening ??= open();
    opening.catch(() => (opening = undefined));
    return opening;
  }

  /** Declares (or, with declareExchange off, checks on a channel of its own) each exchange once. */
  async function ensureExchange(state: Open, exchange: string): Promise<void> {
    if (state.exchanges.has(exchange)) return;
    if (options.declareExchange ?? true) await state.channel.assertExchange(exchange, 'topic', { durable: true });
    else {
      const probe = await state.connection.createChannel();
      probe.on('error', () => undefined);
      try {
        await probe.checkExchange(exchange);
      } catch (err) {
        throw new PublishRejectedError(`RabbitMQ has no exchange ${JSON.stringify(exchange)}`, { cause: err });
      }
      await probe.close().catch(() => undefined);
    }
    state.exchanges.add(exchange);
  }

  function confirm(state: Open, exchange: string, message: BrokerMessage): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        // The channel's state is unknown now: drop it, so the next publish starts clean.
        state.connection.close().catch(() => undefined);
        reject(new Error(`no publisher confirm from RabbitMQ within ${timeoutMs} ms`));
      }, timeoutMs);
      state.returned.delete(message.id);
      const ok = state.channel.publish(exchange, routingKeyOf(message), encodeBody(message), {
        persistent: true,
        mandatory: true,
        messageId: message.id,
        type: message.type,
        contentType: 'application/json',
        timestamp: Math.floor(message.occurredAt.getTime() / 1000),
        headers: wireHeaders(message),
      }, (err) => {
        clearTimeout(timer);
        const returnedBecause = state.returned.get(message.id);
        state.returned.delete(message.id);
        if (!err && returnedBecause) return reject(new PublishRejectedError(returnedBecause));
        if (!err) return resolve();
        // A nack says a queue could not take the message now (RabbitMQ sends one when a queue's
        // process or node dies with the message unconfirmed, and for a full reject-publish
        // queue), nothing about the message: an outage, published again with the same id.
        if (/nack/i.test(String((err as Error).message ?? err))) reject(new Error('RabbitMQ could not take the message now (nack): a queue it routes to lost its node or is full (reject-publish)', { cause: err }));
        else reject(err instanceof Error ? err : new Error(String(err)));
      });
      if (!ok) void once(state.channel, 'drain').catch(() => undefined);
    });
  }

  return {
    kind: 'amqp',
    async publish(message: BrokerMessage): Promise<PublishAck> {
      const state = await current();
      const exchange = exchangeOf(message);
      annotateActiveSpan({ 'messaging.destination.name': exchange });
      await ensureExchange(state, exchange);
      await confirm(state, exchange, message);
      return { duplicate: false };
    },
    async ping(timeoutMs = 2000) {
      // A lost connection clears `opening`: an open one is connected, else this connects anew.
      await withinTimeout(current(), timeoutMs, 'RabbitMQ');
    },
    async close() {
      closed = true;
      const state = await opening?.catch(() => undefined);
      await state?.connection.close().catch(() => undefined);
    },
  };
}
