import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { startAcquirerFake } from 'rastro/internal/charges/acquirer-fake.js';
import { acquirerClient } from 'rastro/internal/charges/acquirer.js';
import { createCharges, type Charge } from 'rastro/internal/charges/charges.js';
import { reconcileEffects } from 'rastro/internal/processing/ledger/reconciler.js';
import { openDatabase } from 'rastro/internal/db/open-database.js';
import { relayAdmin } from 'rastro/internal/outbox/relay-admin.js';
import { createEventStore } from 'rastro/internal/store/event-store.js';

export interface ChargeStoryOptions {
  /** The embedded database's folder (a second process opens it). */
  dataDir: string;
  log?: (line: string) => void;
}

export interface ChargeStoryReport {
  killed: Charge;
  /** Captures the acquirer made, by key. */
  capturedKeys: string[];
  /** Capture requests the acquirer received for the killed charge's key. */
  captureRequests: number;
  retryStatus: number;
  reconciled: Charge;
  unknown: Charge;
  unknownLookups: number;
  /** The outbox messages of each charge, in order, and whether the relay published them all. */
  messages: { chargeId: string; type: string }[];
  pendingInOutbox: number;
}

/** The rastro command, from src/ (tests) or dist/. */
function cliScript(): string {
  const beside = fileURLToPath(new URL('../cli/main.js', import.meta.url));
  return existsSync(beside) ? beside : fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));
}

interface Serve {
  child: ChildProcess;
  url: string;
  exited: Promise<number | null>;
}

async function startServe(dataDir: string, acquirerUrl: string, { reconcile = true } = {}): Promise<Serve> {
  const child = spawn(process.execPath, [cliScript(), 'serve'], {
    env: {
      ...process.env,
      DATABASE_URL: '',
      RASTRO_DATA_DIR: dataDir,
      PORT: '0',
      RASTRO_LOG_LEVEL: 'silent',
      RASTRO_BROKER_URL: '',
      RASTRO_ACQUIRER_URL: acquirerUrl,
      RASTRO_ACQUIRER_TIMEOUT_MS: '1000',
      RASTRO_CHARGE_DEADLINE_SECONDS: '2',
      RASTRO_CHARGE_REVIEW_AFTER_SECONDS: '6',
      RASTRO_RECONCILE_INTERVAL_SECONDS: reconcile ? '1' : '0',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  let output = '';
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      const found = /listening on (http:\/\/\S+)/.exec(output);
      if (found) resolve(found[1]!);
    });
    child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('exit', (code) => reject(new Error(`rastro serve exited (${code}) before listening: ${output.slice(-500)}`)));
  });
  return { child, url, exited };
}

async function post(url: string, key: string, body: unknown): Promise<{ status: number; charge?: Charge }> {
  const response = await fetch(`${url}/charges`, { method: 'POST', headers: { 'content-type': 'application/json', 'idempotency-key': key }, body: JSON.stringify(body) });
  return { status: response.status, charge: (await response.json()) as Charge };
}

async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, ms: number): Promise<T> {
  const start = Date.now();
  for (;;) {
    const value = await read();
    if (done(value) || Date.now() - start > ms) return value;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** Reconciles the embedded database's charges in this process, as `rastro reconcile` does. */
async function reconcileIn(dataDir: string, acquirerUrl: string, chargeId: string): Promise<Charge> {
  const db = await openDatabase({ url: `${dataDir}/pg` });
  try {
    const store = createEventStore(db, { schema: 'rastro' });
    const charges = createCharges(store, { acquirer: acquirerClient(acquirerUrl), timeoutMs: 1_000, deadlineMs: 2_000 });
    return await until(
      async () => {
        await reconcileEffects(store, { types: charges.effectTypes });
        return charges.get(chargeId);
      },
      (charge) => charge.status !== 'PENDING',
      15_000,
    );
  } finally {
    await db.close();
  }
}

/** The Idempotency-Key of the story's first charge, the one whose process is killed. */
export const KILLED_CHARGE_KEY = '7f3a9c1e-2b4d-4f60-9a71-0c5e8d2b3a44';
/** The second charge's key: the acquirer never says whether it captured. */
const UNKNOWN_CHARGE_KEY = 'c0ffee00-0000-4000-8000-000000000002';

function cents(amount: number, currency: string): string {
  return `${(amount / 100).toFixed(2)} ${currency}`;
}

/**
 * The charge story on the embedded database: a charge captured at the acquirer whose API process
 * is SIGKILLed before it writes the outcome; the client's retry answered 202; reconciliation
 * finding the capture; the outbox events published; and a charge the acquirer cannot account
 * for, asked with backoff until it goes to review.
 */
export async function runChargeStory(options: ChargeStoryOptions): Promise<ChargeStoryReport> {
  const log = options.log ?? (() => undefined);
  const acquirer = await startAcquirerFake();
  let serve: Serve | undefined;
  try {
    serve = await startServe(options.dataDir, acquirer.url);
    log('A shop charges its customers\' cards through rastro\'s API, which asks the card acquirer to capture the money.');
    log('A charge still PENDING after 2 s is looked up at the acquirer; one the acquirer cannot account for after 6 s goes to a person.\n');

    // 1. The capture passes, and the process dies before it writes the outcome.
    const key = KILLED_CHARGE_KEY;
    const body = { amountCents: 25_000, customerId: 'customer-42', currency: 'BRL' };
    const victim = serve;
    let capturedAt: string | undefined;
    const killed = new Promise<void>((resolve) => {
      const hook = (capture: { key: string; captureId: string }) => {
        if (capture.key !== key) return;
        capturedAt = capture.captureId;
        victim.child.kill('SIGKILL');
        resolve();
      };
      acquirer.hooks.onCapture = hook;
    });
    const lost = await post(serve.url, key, body).catch((err: unknown) => err as Error);
    await killed;
    await serve.exited;
    log(`1. Customer customer-42 is charged ${cents(body.amountCents, body.currency)} (POST /charges, Idempotency-Key ${key.slice(0, 8)}…). The acquirer captures the money (${capturedAt}),`);
    log(`   and the API process is killed (SIGKILL) before it writes down that it did; the shop got ${lost instanceof Error ? 'no answer' : `HTTP ${lost.status}`}. The charge was written PENDING before the call.`);

    // 2. Restart; the client retries with its key. (This server does not reconcile, so the
    // retry meets the charge as the dead process left it.)
    serve = await startServe(options.dataDir, acquirer.url, { reconcile: false });
    const retry = await post(serve.url, key, body);
    const requests = acquirer.requestsFor.get(key)?.captures ?? 0;
    log(`2. The API is restarted and the shop retries with the same key: HTTP ${retry.status}, ${retry.charge?.status}. The card is not charged a second time:`);
    log(`   the acquirer received ${requests} capture request for the key in all`);
    serve.child.kill('SIGTERM');
    await serve.exited;
    serve = undefined;

    // 3. Reconciliation (what `rastro reconcile` runs), past the deadline, asks the acquirer.
    const id = retry.charge!.id;
    const reconciled = await reconcileIn(options.dataDir, acquirer.url, id);
    log(`3. Past its 2 s deadline, reconciliation (rastro reconcile) asks the acquirer about the key: captured. The charge is now ${reconciled.status} (${reconciled.captureId}),`);
    log('   and its ChargeCaptured event is written with it, for the shop\'s other systems');
    serve = await startServe(options.dataDir, acquirer.url);

    // 4. A capture the acquirer cannot account for: "unknown", asked again with backoff, then review.
    const unknownKey = UNKNOWN_CHARGE_KEY;
    acquirer.faultsFor.set(unknownKey, ['capture-then-timeout']);
    acquirer.unknownLookups.set(unknownKey, 1_000_000);
    const started = await post(serve.url, unknownKey, { amountCents: 9_990, customerId: 'customer-7', currency: 'BRL' });
    log(`4. Customer customer-7 is charged 99.90 BRL; the acquirer captures it but never answers. After the 1 s timeout: HTTP ${started.status}, ${started.charge?.status}`);
    log('   (a timeout is never taken for a failure: the money may have moved)');
    const unknown = await until(async () => (await (await fetch(`${serve!.url}/charges/${started.charge!.id}`)).json()) as Charge, (charge) => charge.status !== 'PENDING', 20_000);
    const lookups = acquirer.requestsFor.get(unknownKey)?.lookups ?? 0;
    log(`   Asked ${lookups} times, each after a longer wait, the acquirer keeps answering "unknown"; past the 6 s deadline the charge is ${unknown.status}: ${unknown.reason}`);

    // 5. The outbox: every event of both charges, published by serve's relay.
    await new Promise((resolve) => setTimeout(resolve, 500));
    serve.child.kill('SIGTERM');
    await serve.exited;
    serve = undefined;
    const db = await openDatabase({ url: `${options.dataDir}/pg` });
    try {
      const store = createEventStore(db, { schema: 'rastro' });
      const { rows } = await db.query<{ aggregate_id: string; type: string }>(`select aggregate_id, type from rastro.outbox where aggregate_type = 'charge' order by position`);
      const [status] = await relayAdmin(store).status();
      const messages = rows.map((row) => ({ chargeId: row.aggregate_id, type: row.type }));
      log(`5. The events told to the shop's other systems, in order: ${messages.map((m) => `${m.type} (${m.chargeId === id ? 'first' : 'second'} charge)`).join(', ')}; ${status?.pending ?? 0} left unpublished`);
      log(`6. Result: ${acquirer.captured().length} captures at the acquirer, each with exactly one charge here: one CAPTURED, and one waiting for a person to look it up at the acquirer instead of a guess`);
      return {
        killed: retry.charge!,
        capturedKeys: acquirer.captured().map((capture) => capture.key),
        captureRequests: requests,
        retryStatus: retry.status,
        reconciled,
        unknown,
        unknownLookups: lookups,
        messages,
        pendingInOutbox: status?.pending ?? 0,
      };
    } finally {
      await db.close();
    }
  } finally {
    if (serve) {
      serve.child.kill('SIGKILL');
      await serve.exited;
    }
    await acquirer.close();
  }
}
