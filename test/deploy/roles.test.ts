import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { connect } from '@nats-io/transport-node';
import { AckPolicy, jetstream, jetstreamManager } from '@nats-io/jetstream';
import { afterEach, describe, expect, it } from 'vitest';
import { startAcquirerFake } from '../../packages/rastro/src/charges/acquirer-fake.js';
import { relayAdmin } from '../../packages/rastro/src/outbox/relay-admin.js';
import { createEventStore } from '../../packages/rastro/src/store/event-store.js';
import { NATS_URL } from '../support/brokers.js';
import { DATABASE_URL, freshSchema, postgresBackend } from '../support/databases.js';
import { eventually } from '../support/eventually.js';
import { spawnRastro, type RastroProcess } from '../support/rastro-process.js';

// docs/deploy.md, tried: every role of a deployment in a process of its own, against one
// PostgreSQL schema and one NATS JetStream stream, with traffic on two API servers at once.

const FIXTURE = join(import.meta.dirname, '../fixtures/role-processors.mjs');
const postgres = postgresBackend();
const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
});
const track = (cleanup: () => Promise<unknown>) => void cleanups.push(cleanup);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Answer<T> {
  status: number;
  body: T;
  replayed: boolean;
}

async function call<T>(url: string, method: 'GET' | 'POST', body?: unknown, key?: string): Promise<Answer<T>> {
  const headers: Record<string, string> = body === undefined ? {} : { 'content-type': 'application/json' };
  if (key) headers['idempotency-key'] = key;
  const res = await fetch(url, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as T, replayed: res.headers.get('idempotent-replayed') === 'true' };
}

/** POSTs with a key until it is answered 2xx; a 409 means the key's first try is still in flight (on the other server). */
async function keyed<T>(url: string, body: unknown, key: string): Promise<Answer<T>> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const answer = await call<T>(url, 'POST', body, key);
    if (answer.status !== 409) return answer;
    await sleep(100);
  }
  throw new Error(`${key} still in flight after 50 tries`);
}

/** Runs `work` over `items`, `width` at a time. */
async function inParallel<T>(items: T[], width: number, work: (item: T, index: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < items.length) {
      const index = next++;
      await work(items[index]!, index);
    }
  }));
}

interface Movement { id: string; amount: number; version: number }
interface Charge { id: string; idempotencyKey: string; status: string; captureId: string | null }
interface Order { id: string; state: { status: string } | null; history: unknown[] }

describe.skipIf(!postgres || !NATS_URL)('a deployment with each role in its own process, on real PostgreSQL and NATS JetStream', () => {
  it('two API servers, a relay, a reconciler, a live runner, a normalizer and an inbox share one schema: every charge captured once, every message relayed and consumed, every deposit and order followed', async () => {
    const { db, schema } = await freshSchema(postgres!);
    const store = createEventStore(db, { schema });
    const tag = randomBytes(4).toString('hex');
    const stream = `T_ROLES_${tag}`;
    const nc = await connect({ servers: NATS_URL! });
    const jsm = await jetstreamManager(nc);
    track(async () => {
      await jsm.streams.delete(stream).catch(() => undefined);
      await nc.close();
    });
    const acquirer = await startAcquirerFake();
    track(() => acquirer.close());

    // The same settings for every process (docs/deploy.md); each process names its connections.
    const env = (app: string): Record<string, string> => ({
      DATABASE_URL: `${DATABASE_URL!}${DATABASE_URL!.includes('?') ? '&' : '?'}application_name=roles_${tag}_${app}`,
      RASTRO_SCHEMA: schema,
      RASTRO_BROKER_URL: NATS_URL!,
      RASTRO_NATS_STREAM: stream,
      RASTRO_SUBJECT_PREFIX: `troles${tag}`,
      RASTRO_ACQUIRER_URL: acquirer.url,
      RASTRO_ACQUIRER_TIMEOUT_MS: '800',
      RASTRO_CHARGE_DEADLINE_SECONDS: '1',
      RASTRO_LOG_LEVEL: 'warn',
    });
    const api = { RASTRO_RELAY: 'off', RASTRO_RECONCILE_INTERVAL_SECONDS: '0', PORT: '0' };
    const roles = await Promise.all([
      spawnRastro('api-a', ['serve'], { ...env('api_a'), ...api }, /listening on (http:\/\/\S+)/, track),
      spawnRastro('api-b', ['serve'], { ...env('api_b'), ...api }, /listening on (http:\/\/\S+)/, track),
      spawnRastro('relay', ['relay', '--name', 'roles'], env('relay'), /relay \S+ publishing to nats/, track),
      spawnRastro('reconciler', ['reconcile', '--every', '1'], env('reconciler'), /reconciling \S+ every 1 s/, track),
      spawnRastro('live', ['live', 'balance-seen', '--processors', FIXTURE], env('live'), /live run \S+ started/, track),
      spawnRastro('normalizer', ['normalize'], env('normalizer'), /order normalizer running live/, track),
      spawnRastro('inbox', ['consume', '--durable', 'roles-inbox'], env('inbox'), /consuming from nats/, track),
    ]);
    const [apiA, apiB, relay, reconciler, , , inbox] = roles as [RastroProcess, RastroProcess, RastroProcess, RastroProcess, RastroProcess, RastroProcess, RastroProcess];
    const servers = [apiA.match[1]!, apiB.match[1]!];
    const server = (i: number) => servers[i % 2]!;

    // Accounts, and keyed deposits spread over both servers; some keys are sent to both at once.
    const accounts: string[] = [];
    for (const [i, owner] of ['Ana', 'Bo', 'Cy', 'Di'].entries()) {
      const opened = await call<{ id: string }>(`${server(i)}/accounts`, 'POST', { owner });
      expect(opened.status).toBe(201);
      accounts.push(opened.body.id);
    }
    const deposits = Array.from({ length: 40 }, (_, i) => ({ key: `dep-${tag}-${i}`, account: accounts[i % accounts.length]!, amount: 1 + ((i * 37) % 500), both: i % 8 === 0 }));
    const accepted = new Map<string, Movement & { account: string }>();
    await inParallel(deposits, 4, async (d, i) => {
      const send = (s: number) => keyed<Movement>(`${server(s)}/accounts/${d.account}/deposit`, { amount: d.amount }, d.key);
      const answers = d.both ? await Promise.all([send(0), send(1)]) : [await send(i)];
      for (const answer of answers) expect(answer.status).toBe(201);
      // Two servers receiving the same key agree on one movement.
      expect(new Set(answers.map((a) => a.body.id)).size).toBe(1);
      accepted.set(d.key, { ...answers[0]!.body, account: d.account });
    });

    // Charges over both servers; a third are captured by the acquirer and answered 500, so they
    // stay PENDING until the reconciler process asks; two keys are sent to both servers at once.
    const charges = Array.from({ length: 15 }, (_, i) => ({ key: `chg-${tag}-${i}`, amountCents: 100 + i, faulted: i % 3 === 0, both: i === 1 || i === 2 }));
    for (const c of charges) if (c.faulted) acquirer.faultsFor.set(c.key, ['capture-then-500']);
    const chargeIds = new Map<string, string>();
    await inParallel(charges, 4, async (c, i) => {
      const send = (s: number) => keyed<Charge>(`${server(s)}/charges`, { amountCents: c.amountCents, customerId: `cust-${i}` }, c.key);
      const answers = c.both ? await Promise.all([send(0), send(1)]) : [await send(i)];
      expect(new Set(answers.map((a) => a.body.id)).size).toBe(1);
      const first = answers.find((a) => !a.replayed) ?? answers[0]!;
      if (c.faulted) expect([first.status, first.body.status]).toEqual([202, 'PENDING']);
      else expect([first.status, first.body.status]).toEqual([201, 'CAPTURED']);
      chargeIds.set(c.key, first.body.id);
    });

    // Order webhooks over both servers, out of order: each order's newest snapshot must win.
    const orders = Array.from({ length: 6 }, (_, i) => `${tag}o${i}`);
    const at = (minute: number) => `2026-09-08T11:${String(10 + minute).padStart(2, '0')}:00.000Z`;
    const webhooks = orders.flatMap((orderId, i) => [
      { orderId, status: 'requested', lastUpdate: at(1) },
      { orderId, status: i % 2 === 0 ? 'received' : 'cancelled', lastUpdate: at(3) },
      { orderId, status: 'partial', lastUpdate: at(2) }, // stale: arrives after a newer one
      { orderId, status: 'requested', lastUpdate: at(1) }, // a redelivery: stored once
    ]);
    for (const [i, webhook] of webhooks.entries()) {
      const answer = await call<{ order: string }>(`${server(i)}/intake/pied/orders`, 'POST', webhook);
      expect(answer.status).toBe(202);
    }

    // Every charge ends CAPTURED: the faulted ones by the reconciler process, the only one that
    // asks the acquirer (both servers run no reconciliation).
    const settled = await eventually(async () => {
      const all = await Promise.all(charges.map(async (c, i) => (await call<Charge>(`${server(i + 1)}/charges/${chargeIds.get(c.key)}`, 'GET')).body));
      return all.every((charge) => charge.status === 'CAPTURED') && all;
    }, 'every charge to be CAPTURED', 20_000);
    for (const c of charges) {
      const requests = acquirer.requestsFor.get(c.key)!;
      expect({ key: c.key, captures: requests.captures, asked: requests.lookups > 0 }).toEqual({ key: c.key, captures: 1, asked: c.faulted });
    }
    // Each capture at the acquirer has exactly one local charge, with its capture id.
    const { rows: local } = await db.query<{ id: string; idempotency_key: string }>(`select id, idempotency_key from "${schema}".charges`);
    expect(local).toHaveLength(charges.length);
    expect(acquirer.captured()).toHaveLength(charges.length);
    for (const capture of acquirer.captured()) {
      const mine = local.filter((row) => row.idempotency_key === capture.key);
      expect(mine).toHaveLength(1);
      expect(settled.find((charge) => charge.id === mine[0]!.id)?.captureId).toBe(capture.captureId);
    }

    // The relay process published every outbox message, ChargeStarted and ChargeCaptured per charge.
    const { rows: outbox } = await db.query<{ id: string; aggregate_id: string; type: string }>(`select id, aggregate_id, type from "${schema}".outbox order by position`);
    expect(outbox).toHaveLength(2 * charges.length);
    for (const id of chargeIds.values()) expect(outbox.filter((m) => m.aggregate_id === id).map((m) => m.type)).toEqual(['ChargeStarted', 'ChargeCaptured']);
    const relays = await eventually(async () => {
      const status = await relayAdmin(store).status();
      return status.every((r) => r.pending === 0) && status;
    }, 'the relay to publish everything');
    expect(relays.map((r) => ({ name: r.name, parked: r.parked, published: r.counters.published }))).toEqual([{ name: 'roles', parked: 0, published: outbox.length }]);
    await jsm.consumers.add(stream, { durable_name: 'check', ack_policy: AckPolicy.None });
    const check = await jetstream(nc).consumers.get(stream, 'check');
    const onNats = new Map<string, string>();
    const deadline = Date.now() + 10_000;
    while (onNats.size < outbox.length && Date.now() < deadline) {
      for await (const m of await check.fetch({ max_messages: 100, expires: 1000 })) onNats.set(m.headers!.get('Nats-Msg-Id'), m.subject);
    }
    expect(onNats.size).toBe(outbox.length);
    for (const m of outbox) expect(onNats.get(m.id)).toBe(`troles${tag}.charge.${m.type}`);

    // The inbox process stored every message it consumed from the stream as an event whose id is
    // the message id, in the charge's stream. (It consumes every subject of RASTRO_NATS_STREAM:
    // here, the relay's own messages come back into the same log, which a deployment would do
    // only for another service's stream; the exactly-once path is the same.)
    const stored = await eventually(async () => {
      const { rows } = await db.query<{ id: string; stream_id: string; type: string }>(`select id, stream_id, type from "${schema}".events where id = any($1::uuid[])`, [outbox.map((m) => m.id)]);
      return rows.length === outbox.length && rows;
    }, 'the inbox to store every message');
    for (const m of outbox) expect(stored.find((e) => e.id === m.id)).toEqual({ id: m.id, stream_id: m.aggregate_id, type: m.type });
    expect((await db.query(`select 1 from "${schema}".inbox_dead_letters`)).rows).toEqual([]);

    // The live runner process followed every deposit, each once, the guard keeping the newest.
    await eventually(async () => {
      const { rows } = await db.query<{ n: number }>(`select count(*)::int as n from "${schema}".projections where projection = 'deposit-seen'`);
      return rows[0]!.n === accepted.size;
    }, 'the live runner to follow every deposit');
    const { rows: seen } = await db.query<{ projection: string; key: string; version: number; doc: { deposits?: number; lastAmount?: number; amount?: number } }>(
      `select projection, key, version, doc from "${schema}".projections where projection in ('balance-seen', 'deposit-seen')`,
    );
    for (const account of accounts) {
      const mine = [...accepted.values()].filter((m) => m.account === account).sort((a, b) => a.version - b.version);
      const last = mine[mine.length - 1]!;
      const row = seen.find((r) => r.projection === 'balance-seen' && r.key === `account-${account}`);
      expect(row).toMatchObject({ version: last.version, doc: { deposits: mine.length, lastAmount: last.amount } });
      const rows = seen.filter((r) => r.projection === 'deposit-seen' && r.key.startsWith(`account-${account}@`));
      expect(rows.map((r) => [r.version, r.doc.amount]).sort((a, b) => a[0]! - b[0]!)).toEqual(mine.map((m) => [m.version, m.amount]));
      const balance = await call<{ balance: number }>(`${server(1)}/accounts/${account}/balance`, 'GET');
      expect(balance.body.balance).toBe(mine.reduce((sum, m) => sum + m.amount, 0));
    }

    // The normalizer process's orders, read from both servers: the newest snapshot won, the
    // redelivery was stored once.
    for (const [i, orderId] of orders.entries()) {
      const order = await eventually(async () => {
        const answer = await call<Order>(`${server(i)}/orders/pied:${orderId}`, 'GET');
        return answer.status === 200 && answer.body.state !== null && answer.body;
      }, `order ${orderId} to be normalized`);
      expect(order.state!.status).toBe(i % 2 === 0 ? 'received' : 'cancelled');
      expect(order.history).toHaveLength(3);
      expect((await call<Order>(`${server(i + 1)}/orders/pied:${orderId}`, 'GET')).body.state).toEqual(order.state);
    }

    // No process holds more than its pool and the two extra connections docs/deploy.md budgets.
    const { rows: connections } = await db.query<{ app: string; n: number }>(
      `select application_name as app, count(*)::int as n from pg_stat_activity where application_name like $1 group by 1`, [`roles_${tag}_%`],
    );
    expect(connections.length).toBe(roles.length);
    for (const c of connections) expect(c.n, c.app).toBeLessThanOrEqual(12);

    // SIGTERM: every process stops cleanly.
    const codes = await Promise.all(roles.map(async (role) => [role.role, await role.stop()]));
    expect(Object.fromEntries(codes)).toEqual(Object.fromEntries(roles.map((role) => [role.role, 0])));
    expect(relay.output()).toMatch(new RegExp(`relay stopped: .*published ${outbox.length}`));
    expect(inbox.output()).toContain(`inbox stopped: ${outbox.length} stored, 0 duplicates, 0 dead-lettered`);
    // The reconciler's passes settled exactly the faulted charges.
    const done = [...reconciler.output().matchAll(/asked (\d+), (\d+) done/g)].reduce((sum, m) => sum + Number(m[2]), 0);
    expect(done).toBe(charges.filter((c) => c.faulted).length);
    for (const role of roles) expect(role.output(), role.role).not.toMatch(/^\s+at /m);
  }, 90_000);
});
