import { randomUUID } from 'node:crypto';
import { acquirerClient } from '../../packages/rastro/src/charges/acquirer.js';
import { startAcquirerFake, type AcquirerFake, type CaptureFault } from '../../packages/rastro/src/charges/acquirer-fake.js';
import { createCharges, type Charge, type Charges } from '../../packages/rastro/src/charges/charges.js';
import type { Database } from '../../packages/rastro/src/db/database.js';
import { createEventStore, type EventStore } from '../../packages/rastro/src/store/event-store.js';
import { NATS_URL } from './brokers.js';
import { DATABASE_URL, freshSchema, type Backend } from './databases.js';
import { spawnServe, type ServeProcess } from './serve-process.js';

// Lanes of the charge crash test (test/charges/charge-crash.test.ts): a schema, an acquirer fake
// and the serve processes started on them one after another, and clients that retry.

/**
 * The acquirer call's timeout, the deadline after which reconciliation asks, and the business
 * deadline. A lookup that times out (a process just started on a busy machine) counts as
 * "unknown"; the review window leaves room to ask again after serve's 5 s backoff, so only the
 * keys whose lookups the fake makes answer unknown go to review.
 */
export const TIMEOUT_MS = 1_000;
export const DEADLINE_S = 2;
export const REVIEW_AFTER_S = 6;

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
export const pick = <T>(items: readonly T[]): T => items[Math.floor(Math.random() * items.length)]!;

export interface LaneOptions {
  serveReconciles: boolean;
  whenNotFound: 'retry' | 'fail';
}

/** One client's charge: its key and body, what the acquirer will do with it, and what it got. */
export interface ClientCharge {
  key: string;
  body: { amountCents: number; customerId: string; currency: string };
  trial: number;
  declines: boolean;
  /** Its lookups answer `unknown`: once, or for good. */
  lookupsUnknown: boolean;
  attempts: number;
  answer?: { status: number; charge: Charge };
  refused?: string;
}

/** What the fake does with a key: most capture and answer, some are declined for good, some answer ambiguously once. */
export function planFor(fake: AcquirerFake, key: string): { declines: boolean; lookupsUnknown: boolean } {
  const r = Math.random();
  const faults: CaptureFault[] =
    r < 0.5 ? [] : r < 0.6 ? Array<CaptureFault>(50).fill('decline') : [pick(['fail-before', 'capture-then-500', 'capture-then-reset', 'capture-then-timeout'] as const)];
  if (faults.length > 0) fake.faultsFor.set(key, faults);
  // Lookups that cannot say: for good (the charge goes to review), or once (asked again later,
  // unless that first question came after the business deadline: review too).
  const u = Math.random();
  if (u < 0.12) fake.unknownLookups.set(key, u < 0.06 ? 1e9 : 1);
  return { declines: faults[0] === 'decline', lookupsUnknown: u < 0.12 };
}

export interface Lane extends LaneOptions {
  index: number;
  db: Database;
  schema: string;
  store: EventStore;
  /** The same charges as serve's, in the test process, for reconciling and reading. */
  charges: Charges;
  fake: AcquirerFake;
  prefix: string;
  stream: string;
  clients: Map<string, ClientCharge>;
  running: Promise<void>[];
  /** Every serve process the lane started, to stop whatever is left if the test fails. */
  processes: ServeProcess[];
  serverErrors: string[];
  /** Hooks a trial arms to kill at its point. */
  onCapture?: (key: string) => void;
  onPublished?: () => void;
  onAnswer?: (status: number) => void;
  url(): Promise<string>;
  up(url: string): void;
  down(): void;
}

export async function openLane(backend: Backend, index: number, options: LaneOptions, tag: string): Promise<Lane> {
  const { db, schema } = await freshSchema(backend);
  const store = createEventStore(db, { schema });
  const waiting: ((url: string) => void)[] = [];
  let current: string | undefined;
  const lane: Lane = {
    index,
    ...options,
    db,
    schema,
    store,
    charges: undefined as unknown as Charges,
    fake: await startAcquirerFake({ onCapture: (capture) => lane.onCapture?.(capture.key) }),
    prefix: `cc${tag}l${index}`,
    stream: `CC_${tag}_${index}`,
    clients: new Map(),
    running: [],
    processes: [],
    serverErrors: [],
    url: () => (current ? Promise.resolve(current) : new Promise((resolve) => waiting.push(resolve))),
    up(url) {
      current = url;
      for (const resolve of waiting.splice(0)) resolve(url);
    },
    down() {
      current = undefined;
    },
  };
  lane.charges = createCharges(store, {
    acquirer: acquirerClient(lane.fake.url),
    timeoutMs: TIMEOUT_MS,
    deadlineMs: DEADLINE_S * 1000,
    reviewAfterMs: REVIEW_AFTER_S * 1000,
    whenNotFound: options.whenNotFound,
    backoff: { initialMs: 200, maxMs: 1_000 },
  });
  return lane;
}

export function startServe(lane: Lane, app: string): ServeProcess {
  const proc = spawnServe({ databaseUrl: DATABASE_URL!, schema: lane.schema, app, env: serveEnv(lane) });
  lane.processes.push(proc);
  return proc;
}

export function serveEnv(lane: Lane): Record<string, string> {
  return {
    RASTRO_ACQUIRER_URL: lane.fake.url,
    RASTRO_ACQUIRER_TIMEOUT_MS: String(TIMEOUT_MS),
    RASTRO_CHARGE_DEADLINE_SECONDS: String(DEADLINE_S),
    RASTRO_CHARGE_REVIEW_AFTER_SECONDS: String(REVIEW_AFTER_S),
    RASTRO_RECONCILE_INTERVAL_SECONDS: lane.serveReconciles ? '1' : '0',
    RASTRO_CHARGE_NOT_FOUND: lane.whenNotFound,
    RASTRO_LOG_LEVEL: 'warn',
    ...(NATS_URL ? { RASTRO_BROKER_URL: NATS_URL, RASTRO_SUBJECT_PREFIX: lane.prefix, RASTRO_NATS_STREAM: lane.stream } : {}),
  };
}

/** A client: POSTs its charge until it gets an answer, with the same key and body after any error or lost connection. */
export async function runClient(lane: Lane, client: ClientCharge): Promise<void> {
  for (;;) {
    const url = await lane.url();
    client.attempts++;
    try {
      const res = await fetch(`${url}/charges`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': client.key },
        body: JSON.stringify(client.body),
        signal: AbortSignal.timeout(10_000),
      });
      const text = await res.text();
      if (res.status === 201 || res.status === 202) {
        client.answer = { status: res.status, charge: JSON.parse(text) as Charge };
        lane.onAnswer?.(res.status);
        return;
      }
      if (res.status >= 500) lane.serverErrors.push(`${res.status} ${text.slice(0, 300)}`);
      else return void (client.refused = `${res.status} ${text.slice(0, 300)}`);
    } catch {
      // Refused, reset or cut off by a kill: the same request again, to whichever process is up.
    }
    await sleep(30 + Math.random() * 70);
  }
}

export function startClient(lane: Lane, trial: number): void {
  const key = randomUUID();
  const plan = planFor(lane.fake, key);
  const client: ClientCharge = {
    key,
    body: { amountCents: 100 + Math.floor(Math.random() * 100_000), customerId: `customer-${lane.index}-${Math.floor(Math.random() * 50)}`, currency: pick(['BRL', 'BRL', 'USD']) },
    trial,
    ...plan,
    attempts: 0,
  };
  lane.clients.set(key, client);
  lane.running.push(runClient(lane, client));
}

export async function pendingCount(lane: Lane): Promise<number> {
  return (await lane.charges.countsByStatus()).PENDING;
}
