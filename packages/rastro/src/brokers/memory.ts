import type { BrokerMessage, PublishAck, Publisher } from './message.js';

/** The in-process publisher's extra: subscribers in the same process. */
export interface MemoryPublisher extends Publisher {
  /** Calls `fn` for every message published from now on; returns the unsubscribe function. */
  subscribe(fn: (message: BrokerMessage) => void): () => void;
  /** Messages published so far, up to the last `keep`. */
  readonly published: readonly BrokerMessage[];
}

/**
 * The publisher of the embedded default (no `RASTRO_BROKER_URL`): it hands messages to
 * subscribers in the same process, so `npm start` runs the relay with no broker. It keeps the
 * last `keep` messages for inspection. Nothing survives the process: use a real broker for that.
 *
 * @example
 * ```ts
 * const publisher = createMemoryPublisher()
 * publisher.subscribe((message) => console.log(message.type))
 * ```
 */
export function createMemoryPublisher(options: { keep?: number } = {}): MemoryPublisher {
  const keep = options.keep ?? 1000;
  const subscribers = new Set<(message: BrokerMessage) => void>();
  const published: BrokerMessage[] = [];
  let closed = false;
  return {
    kind: 'memory',
    published,
    async publish(message: BrokerMessage): Promise<PublishAck> {
      if (closed) throw new Error('the in-process publisher is closed');
      published.push(message);
      if (published.length > keep) published.splice(0, published.length - keep);
      for (const fn of subscribers) fn(message);
      return { duplicate: false };
    },
    async ping() {
      if (closed) throw new Error('the in-process publisher is closed');
    },
    subscribe(fn) {
      subscribers.add(fn);
      return () => void subscribers.delete(fn);
    },
    async close() {
      closed = true;
      subscribers.clear();
    },
  };
}
