import type { Database } from '../db/database.js';
import type { EventDecoder } from '../store/decode.js';
import type { EffectPolicy } from './policy.js';
import type { Processor } from './processor.js';
import type { ProcessingSql } from './sql.js';

/** Everything a batch needs to know about the run it belongs to. */
export interface RunContext {
  db: Database;
  sql: ProcessingSql;
  /** The store's schema. */
  schema: string;
  processor: Processor;
  /** What decodes the run's events: the processor's event types (else the store's), the store's subject keys. */
  decoder?: EventDecoder;
  runId: string;
  mode: 'live' | 'replay';
  simulate: boolean;
  policy: EffectPolicy;
  /** This runner's advisory-lock token, recorded on its reservations. */
  ownerToken: number;
  /** Age after which another run may take over a `release` reservation. */
  leaseMs: number;
  /** Provider calls in flight at once. */
  effectConcurrency: number;
}

/** Per-run counters, persisted with each batch. */
export const COUNTER_NAMES = [
  'events',
  'suppressed',
  'already-recorded',
  'would-apply',
  'applied',
  'uncertain',
  'released-after-failure',
  'written',
  'ignored-newer-version',
  'parked',
] as const;

export type CounterName = (typeof COUNTER_NAMES)[number];

/** Counters of a run, by name: a processor's {@link CounterName}s, or a relay's. */
export class Counters<Name extends string = CounterName> {
  private readonly values = new Map<Name, number>();

  add(name: Name, by = 1): void {
    this.values.set(name, (this.values.get(name) ?? 0) + by);
  }

  get(name: Name): number {
    return this.values.get(name) ?? 0;
  }

  entries(): [Name, number][] {
    return [...this.values].filter(([, value]) => value !== 0);
  }
}
