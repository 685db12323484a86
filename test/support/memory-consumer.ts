import type { BrokerConsumer, Delivery } from '../../packages/rastro/src/brokers/consumer.js';
import type { MemoryPublisher } from '../../packages/rastro/src/brokers/memory.js';
import { encodeBody, wireHeaders, type BrokerMessage } from '../../packages/rastro/src/brokers/message.js';

/**
 * The in-process publisher's subscribers as an inbox consumer: each message published from now
 * on is delivered as a broker would hand it over (its wire headers, lowercase, and its JSON body),
 * one at a time. What `ack` and `retry` were called for is kept for the test.
 */
export function memoryConsumer(publisher: MemoryPublisher): BrokerConsumer & { acked: string[]; deliveries: Delivery['raw'][] } {
  const queue: BrokerMessage[] = [];
  let wake: (() => void) | undefined;
  let stopped = false;
  const acked: string[] = [];
  const deliveries: Delivery['raw'][] = [];
  const unsubscribe = publisher.subscribe((message) => {
    queue.push(message);
    wake?.();
  });
  return {
    kind: 'nats',
    acked,
    deliveries,
    async run(handle) {
      while (!stopped) {
        const message = queue.shift();
        if (!message) {
          await new Promise<void>((resolve) => (wake = resolve));
          continue;
        }
        const headers: Record<string, string> = {};
        for (const [name, value] of Object.entries(wireHeaders(message))) headers[name.toLowerCase()] = value;
        const raw = { messageId: message.id, source: `rastro.${message.aggregateType}.${message.type}`, headers, body: encodeBody(message).toString('utf8') };
        deliveries.push(raw);
        await handle({ raw, ack: async () => void acked.push(message.id), retry: async () => void queue.unshift(message) });
      }
    },
    async stop() {
      stopped = true;
      unsubscribe();
      wake?.();
    },
  };
}
