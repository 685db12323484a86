import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { AckPolicy, jetstream, jetstreamManager } from '@nats-io/jetstream';
import { afterEach, describe, expect, it } from 'vitest';
import { createOutbox } from '../../packages/rastro/src/outbox/outbox.js';
import { relayAdmin } from '../../packages/rastro/src/outbox/relay-admin.js';
import { createEventStore } from '../../packages/rastro/src/store/event-store.js';
import { NATS_URL } from '../support/brokers.js';
import { DATABASE_URL, freshSchema, postgresBackend } from '../support/databases.js';
import { proxiedDatabase } from '../support/database-proxy.js';
import { eventually } from '../support/eventually.js';
import { spawnRastro } from '../support/rastro-process.js';

const FIXTURE = join(import.meta.dirname, '../fixtures/outage-processors.mjs');
const backend = postgresBackend();
const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
});

const track = (cleanup: () => Promise<unknown>) => cleanups.push(cleanup);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.skipIf(!backend)('rastro serve while its database goes away twice', () => {
  it('answers 503 with Retry-After during each cut, survives, applies every keyed deposit once, and its relay and a live processor resume', async () => {
    const { db: direct, schema } = await freshSchema(backend!);
    const store = createEventStore(direct, { schema });
    const proxy = await proxiedDatabase(DATABASE_URL!);
    cleanups.push(() => proxy.close());
    const tag = randomBytes(4).toString('hex');
    const broker: Record<string, string> = NATS_URL ? { RASTRO_BROKER_URL: NATS_URL, RASTRO_NATS_STREAM: `T_OUTAGE_${tag}`, RASTRO_SUBJECT_PREFIX: `toutage${tag}` } : {};
    let nc: NatsConnection | undefined;
    if (NATS_URL) {
      nc = await connect({ servers: NATS_URL });
      const jsm = await jetstreamManager(nc);
      cleanups.push(async () => {
        await jsm.streams.delete(`T_OUTAGE_${tag}`).catch(() => undefined);
        await nc!.close();
      });
    }
    const env = { DATABASE_URL: proxy.url, RASTRO_SCHEMA: schema, PORT: '0', RASTRO_LOG_LEVEL: 'warn', ...broker };
    const serve = await spawnRastro('serve', ['serve'], env, /listening on (http:\/\/\S+)/, track);
    const url = serve.match[1]!;
    const live = await spawnRastro('live', ['live', 'deposits-seen', '--processors', FIXTURE], env, /live run \S+ started/, track);

    const accounts: string[] = [];
    for (const owner of ['Ana', 'Bo', 'Cy']) {
      const res = await fetch(`${url}/accounts`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ owner }) });
      accounts.push(((await res.json()) as { id: string }).id);
    }

    // Outbox messages written beside the service, straight to the database, all along.
    const outbox = createOutbox(direct, { schema });
    const written: string[] = [];
    let writing = true;
    cleanups.push(async () => (writing = false));
    const writer = (async () => {
      while (writing) {
        const message = await direct.transaction((tx) => outbox.write(tx, { aggregateType: 'note', aggregateId: `n${written.length % 4}`, type: 'Noted', payload: { n: written.length } }));
        written.push(message.id);
        await sleep(50);
      }
    })();

    // Clients that deposit with a key each, and retry the same key on 503 (and on 409: the key's first try is still in flight).
    const accepted = new Map<string, { account: string; amount: number }>();
    const statuses = new Map<number, number>();
    const missingRetryAfter: number[] = [];
    let depositing = true;
    cleanups.push(async () => (depositing = false));
    const client = async (c: number) => {
      for (let i = 0; depositing; i++) {
        const key = `c${c}-${i}`;
        const account = accounts[(c + i) % accounts.length]!;
        const amount = 1 + ((c * 31 + i * 7) % 100);
        for (;;) {
          const res = await fetch(`${url}/accounts/${account}/deposit`, {
            method: 'POST', headers: { 'content-type': 'application/json', 'idempotency-key': key }, body: JSON.stringify({ amount }),
          });
          statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
          await res.arrayBuffer();
          if (res.status === 201) break;
          if (res.status === 503 && res.headers.get('retry-after') === null) missingRetryAfter.push(res.status);
          // Anything else (a 500) is counted, and this client stops: the assertions below name it.
          if (res.status !== 503 && res.status !== 409) return;
          await sleep(200);
        }
        accepted.set(key, { account, amount });
      }
    };
    const clients = Promise.all([0, 1, 2, 3].map(client));
    const readiness = async () => {
      const res = await fetch(`${url}/readyz`);
      return { status: res.status, retryAfter: res.headers.get('retry-after'), body: (await res.json()) as { failing?: string[]; detail?: string } };
    };

    await sleep(1000);
    expect(accepted.size).toBeGreaterThan(0);
    const notReady: Awaited<ReturnType<typeof readiness>>[] = [];
    for (let cut = 0; cut < 2; cut++) {
      const before = statuses.get(503) ?? 0;
      await proxy.cut();
      const until = Date.now() + 3000;
      while (Date.now() < until) {
        notReady.push(await readiness());
        await sleep(300);
      }
      expect(statuses.get(503) ?? 0).toBeGreaterThan(before);
      expect(serve.child.exitCode).toBeNull();
      await proxy.restore();
      await eventually(async () => (await readiness()).status === 200, 'ready again after the cut');
      await sleep(1500);
    }
    depositing = false;
    await clients;
    writing = false;
    await writer;

    // During the cuts: 503s with Retry-After, never a 500; /readyz named the database.
    expect(Object.fromEntries(statuses)).toEqual({ 201: accepted.size, 503: expect.any(Number), ...(statuses.has(409) ? { 409: expect.any(Number) } : {}) });
    expect(missingRetryAfter).toEqual([]);
    expect(notReady.length).toBeGreaterThan(0);
    for (const answer of notReady) {
      expect(answer.status).toBe(503);
      expect(answer.retryAfter).toBe('2');
      expect(answer.body.failing).toContain('database');
      expect(answer.body.detail).toContain('database (the database is not reachable)');
    }
    expect(serve.child.exitCode).toBeNull();
    expect(live.child.exitCode).toBeNull();

    // Every accepted deposit applied exactly once.
    const { rows } = await direct.query<{ stream_id: string; n: number; total: number }>(
      `select stream_id, count(*)::int as n, sum((data->>'amount')::int)::int as total from "${schema}".events where type = 'AccountDeposited' group by stream_id`,
    );
    for (const account of accounts) {
      const mine = [...accepted.values()].filter((d) => d.account === account);
      const row = rows.find((r) => r.stream_id === `account-${account}`);
      expect(row?.n ?? 0).toBe(mine.length);
      const balance = (await (await fetch(`${url}/accounts/${account}/balance`)).json()) as { balance: number };
      expect(balance.balance).toBe(mine.reduce((sum, d) => sum + d.amount, 0));
    }

    // The relay published what was written before, during and after the cuts.
    await eventually(async () => {
      const [status] = await relayAdmin(store).status();
      return status && status.pending === 0 && status.parked === 0;
    }, 'the relay to catch up');
    if (nc) {
      const js = jetstream(nc);
      const jsm = await jetstreamManager(nc);
      await jsm.consumers.add(`T_OUTAGE_${tag}`, { durable_name: 'check', ack_policy: AckPolicy.None });
      const consumer = await js.consumers.get(`T_OUTAGE_${tag}`, 'check');
      const ids = new Set<string>();
      const deadline = Date.now() + 20_000;
      while (ids.size < written.length && Date.now() < deadline) {
        for await (const message of await consumer.fetch({ max_messages: 500, expires: 1000 })) ids.add(message.headers!.get('Nats-Msg-Id'));
      }
      expect(written.every((id) => ids.has(id))).toBe(true);
    }

    // The live processor followed every deposit, through both cuts.
    await eventually(async () => {
      const { rows: behind } = await direct.query<{ n: number }>(
        `select count(*)::int as n from "${schema}".streams s left join "${schema}".projections p on p.projection = 'deposits-seen' and p.key = s.stream_id
          where s.stream_id like 'account-%' and p.version is distinct from s.version`,
      );
      return behind[0]!.n === 0;
    }, 'the live processor to catch up');

    serve.child.kill('SIGTERM');
    live.child.kill('SIGTERM');
    expect(await serve.exited).toBe(0);
    expect(await live.exited).toBe(0);
  });
});
