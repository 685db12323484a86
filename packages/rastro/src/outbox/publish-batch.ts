import { PublishRejectedError, type Publisher } from '../brokers/message.js';
import { Counters } from '../processing/run-context.js';
import { publishInSpan } from './publish-span.js';
import type { RelayMessage } from './relay-source.js';

/** A relay's counters, persisted per run like a processor's. */
export type RelayCounter = 'published' | 'duplicates' | 'failed' | 'parked' | 'skipped';

export interface PublishSettings {
  publisher: Publisher;
  /** Publishes awaiting their ack at once, across aggregates. */
  maxInFlight: number;
  /** Refusals of one message before it is parked. */
  maxAttempts: number;
  /** The wait before the first retry of a refused message; doubled on each retry. */
  retryDelayMs: number;
}

/**
 * What became of each message of a batch: `sent` (the broker has it), `failed` (refused
 * `maxAttempts` times: parked), `waiting` (behind a parked message of its aggregate: parked too),
 * or `unsent` (the batch was interrupted before it).
 */
export type MessageState = 'sent' | 'failed' | 'waiting' | 'unsent';

export interface PublishedBatch {
  states: MessageState[];
  errors: (string | null)[];
  counters: Counters<RelayCounter>;
  /** A failure not about one message (a lost connection, a timeout): nothing after it was sent. */
  interruption?: unknown;
}

/** A counting semaphore: at most `size` publishes in flight. */
class Slots {
  private free: number;
  private readonly queue: (() => void)[] = [];

  constructor(size: number) {
    this.free = size;
  }

  async take(): Promise<void> {
    if (this.free > 0) return void this.free--;
    await new Promise<void>((resolve) => this.queue.push(resolve));
  }

  give(): void {
    const next = this.queue.shift();
    if (next) next();
    else this.free++;
  }
}

const delay = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const errorText = (err: unknown) => (err instanceof Error ? err.message : String(err)).slice(0, 2000);

/**
 * Publishes a batch with many publishes in flight while keeping each aggregate's order: an
 * aggregate's messages go one after another, each after the previous one's ack, so a failed
 * publish can never let a later message of its aggregate overtake it. Aggregates run side by
 * side. Aggregates in `blocked` (a parked message of theirs) are not published at all.
 */
export async function publishBatch(messages: RelayMessage[], blocked: ReadonlySet<string>, settings: PublishSettings): Promise<PublishedBatch> {
  const result: PublishedBatch = { states: messages.map(() => 'unsent'), errors: messages.map(() => null), counters: new Counters() };
  const chains = new Map<string, number[]>();
  for (const [i, message] of messages.entries()) {
    const chain = chains.get(message.aggregateKey);
    if (chain) chain.push(i);
    else chains.set(message.aggregateKey, [i]);
  }
  const slots = new Slots(settings.maxInFlight);

  /** Publishes one message until the broker has it; false when the chain must stop. */
  async function send(i: number): Promise<boolean> {
    const { undecodable } = messages[i]!;
    if (undecodable) {
      // No payload to publish: parked with the reason, as a refusal is.
      result.states[i] = 'failed';
      result.errors[i] = errorText(undecodable);
      result.counters.add('failed');
      return false;
    }
    for (let attempt = 1; ; attempt++) {
      if (result.interruption !== undefined) return false;
      await slots.take();
      try {
        const ack = await publishInSpan(settings.publisher, messages[i]!.message);
        result.states[i] = 'sent';
        result.counters.add(ack.duplicate ? 'duplicates' : 'published');
        return true;
      } catch (err) {
        result.counters.add('failed');
        if (!(err instanceof PublishRejectedError)) {
          result.interruption ??= err;
          return false;
        }
        if (attempt >= settings.maxAttempts) {
          result.states[i] = 'failed';
          result.errors[i] = errorText(err);
          return false;
        }
      } finally {
        slots.give();
      }
      await delay(settings.retryDelayMs * 2 ** (attempt - 1));
    }
  }

  async function runChain(key: string, chain: number[]): Promise<void> {
    let k = 0;
    if (!blocked.has(key)) {
      while (k < chain.length && (await send(chain[k]!))) k++;
      if (k === chain.length || result.states[chain[k]!] !== 'failed') return;
      k++;
    }
    for (; k < chain.length; k++) result.states[chain[k]!] = 'waiting';
  }

  await Promise.all([...chains].map(([key, chain]) => runChain(key, chain)));
  return result;
}
