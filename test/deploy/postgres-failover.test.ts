import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from '@nats-io/transport-node';
import { DeliverPolicy, jetstream, jetstreamManager } from '@nats-io/jetstream';
import { afterEach, describe, expect, it } from 'vitest';
import { startAcquirerFake, type AcquirerFake } from '../../packages/rastro/src/charges/acquirer-fake.js';
import { canStartNats, startPrivateNats, startTcpProxy } from '../support/brokers.js';
import { eventually } from '../support/eventually.js';
import { startLoad, type Answered } from '../support/failover-load.js';
import { startNotifierFake } from '../support/notifier-fake.js';
import { canStartPostgres, startPostgresPair, type PostgresNode } from '../support/postgres-pair.js';
import { runRastro } from '../support/cli.js';
import { spawnRastro, type RastroProcess } from '../support/rastro-process.js';

// A deployment on a private PostgreSQL primary with a streaming standby, reached through a proxy
// (what a virtual address, HAProxy behind Patroni or a managed endpoint is). Clients deposit,
// charge and post webhooks throughout; the primary dies, the standby is promoted, the proxy
// switches, and two roles are SIGKILLed in the middle of it. Every other role rides it out.

const FIXTURE = join(import.meta.dirname, '../fixtures/failover-processors.mjs');
const POLICY = join(import.meta.dirname, '../fixtures/failover-policy.json');
const INBOX = 'failover-inbox';
const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
});
const track = (cleanup: () => Promise<unknown>) => void cleanups.push(cleanup);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Failover {
  answered: Answered[];
  statuses: Map<number, number>;
  /** The promoted standby, queried directly. */
  db: PostgresNode;
  acquirer: AcquirerFake;
  notifier: Awaited<ReturnType<typeof startNotifierFake>>;
  /** Ids of every message the stream holds. */
  streamIds(): Promise<string[]>;
  /** The inbox's durable has nothing left to deliver or to be acknowledged. */
  inboxIdle(): Promise<boolean>;
  /** When the standby stopped receiving (asynchronous) and when the proxy switched. */
  heldBackAt: number;
  switchedAt: number;
  survivors: RastroProcess[];
  /** `rastro audit` against the new primary. */
  audit(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }>;
  /** `rastro verify --full --json` against the new primary, with every digest the API servers published (before and after the switch). */
  verifyDigests(): Promise<{ code: number | null; findings: { kind: string; subject: { id: string } }[]; digests: { file: string; block: number; takenAt: number }[] }>;
}

/** The engines and providers, private to the test: a primary and standby behind the proxy, NATS, the acquirer and the notifier. */
async function startOutside(synchronous: boolean) {
  const pair = await startPostgresPair({ synchronous });
  track(() => pair.close());
  const proxy = await startTcpProxy({ host: '127.0.0.1', port: pair.primary.port });
  track(() => proxy.close());
  const nats = await startPrivateNats();
  track(() => nats.close());
  const acquirer = await startAcquirerFake();
  track(() => acquirer.close());
  const notifier = await startNotifierFake();
  track(() => notifier.close());
  // Where the API servers publish the trail's digests, every second: outside the database, as a bucket would be.
  const digests = mkdtempSync(join(tmpdir(), 'rastro-failover-digests-'));
  track(async () => rmSync(digests, { recursive: true, force: true }));
  // The same settings for every process, each naming its connections.
  const env = (app: string): Record<string, string> => ({
    DATABASE_URL: `postgres://postgres@127.0.0.1:${proxy.port}/postgres?application_name=${app}`, RASTRO_BROKER_URL: nats.url,
    RASTRO_ACQUIRER_URL: acquirer.url, RASTRO_ACQUIRER_TIMEOUT_MS: '800', RASTRO_CHARGE_DEADLINE_SECONDS: '1', RASTRO_LOG_LEVEL: 'warn',
    RASTRO_POOL_SIZE: '4', TEST_NOTIFIER_URL: notifier.url,
  });
  return { pair, proxy, nats, acquirer, notifier, env, digests };
}

/** Every role in a process of its own; `spawnApi` and `spawnRelay` start more. */
async function startRoles(env: (app: string) => Record<string, string>, digests: string) {
  const api = {
    RASTRO_RELAY: 'off', RASTRO_NORMALIZER: 'off', RASTRO_RECONCILE_INTERVAL_SECONDS: '0', PORT: '0',
    RASTRO_DIGEST_PUBLISH: `folder:${digests}`, RASTRO_DIGEST_INTERVAL_SECONDS: '1',
  };
  const spawnApi = (name: string) => spawnRastro(name, ['serve'], { ...env(name), ...api }, /listening on (http:\/\/\S+)/, track);
  const spawnRelay = (name: string) => spawnRastro(name, ['relay', '--name', 'failover'], env(name), /publishing to nats/, track);
  // serve migrates the schema; the other roles start on it.
  const apiA = await spawnApi('api_a');
  const [apiB, relay1, relay2, ...rest] = await Promise.all([
    spawnApi('api_b'), spawnRelay('relay_1'), spawnRelay('relay_2'),
    spawnRastro('reconciler', ['reconcile', '--every', '1', '--processors', FIXTURE], env('reconciler'), /reconciling .* every 1 s/, track),
    spawnRastro('live', ['live', 'deposit-notice', '--processors', FIXTURE, '--policy', POLICY], env('live'), /live run \S+ started/, track),
    spawnRastro('normalizer', ['normalize'], env('normalizer'), /order normalizer running live/, track),
    spawnRastro('inbox', ['consume', '--durable', INBOX], env('inbox'), /consuming from nats/, track),
  ]);
  return { apiA, apiB: apiB!, relay2: relay2!, survivors: [apiA, relay1!, ...rest], spawnApi, spawnRelay };
}

/** What the test reads from the stream: every message id, and whether the inbox's durable is idle. */
async function streamReader(url: string) {
  const nc = await connect({ servers: url });
  track(() => nc.close());
  return {
    async inboxIdle() {
      const info = await (await jetstreamManager(nc)).consumers.info('RASTRO', INBOX);
      return info.num_pending === 0 && info.num_ack_pending === 0;
    },
    async streamIds() {
      const consumer = await jetstream(nc).consumers.get('RASTRO', { deliver_policy: DeliverPolicy.All, headers_only: true });
      const ids: string[] = [];
      for (let got = -1; got !== 0;) {
        got = 0;
        for await (const m of await consumer.fetch({ max_messages: 1000, expires: 1000 })) {
          got++;
          ids.push(m.headers!.get('Nats-Msg-Id'));
        }
      }
      return ids;
    },
  };
}

/**
 * Load for 3 s; asynchronous: the standby held back and 2 s more; then the primary dies, an API
 * server and a relay are SIGKILLed, the standby is promoted, the proxy switches, and both come
 * back; 4 s more load.
 */
async function failover(synchronous: boolean): Promise<Failover> {
  const { pair, proxy, nats, acquirer, notifier, env, digests } = await startOutside(synchronous);
  const roles = await startRoles(env, digests);
  let { apiB, relay2 } = roles;
  const servers = () => [roles.apiA.match[1]!, apiB.match[1]!];
  const accounts: string[] = [];
  for (const owner of ['Ana', 'Bo', 'Cy', 'Di']) {
    const res = await fetch(`${servers()[0]}/accounts`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ owner }) });
    accounts.push(((await res.json()) as { id: string }).id);
  }
  const load = startLoad(servers, accounts, randomBytes(3).toString('hex'));
  track(() => load.stop());
  await sleep(3000);
  let heldBackAt = 0;
  if (!synchronous) {
    // What the primary commits from now on never reaches the standby: the tail a promotion loses.
    await pair.holdBackStandby();
    heldBackAt = Date.now();
    await sleep(2000);
  }
  await pair.killPrimary();
  await proxy.cut();
  apiB.child.kill('SIGKILL');
  relay2.child.kill('SIGKILL');
  await sleep(1000);
  await pair.promote();
  await proxy.switchTo({ host: '127.0.0.1', port: pair.standby.port });
  const switchedAt = Date.now();
  [apiB, relay2] = await Promise.all([roles.spawnApi('api_b2'), roles.spawnRelay('relay_2b')]);
  await sleep(4000);
  await load.stop();
  return {
    answered: load.answered, statuses: load.statuses, db: pair.standby, acquirer, notifier, heldBackAt, switchedAt, survivors: roles.survivors,
    ...(await streamReader(nats.url)),
    async verifyDigests() {
      const files = readdirSync(digests).filter((name) => name.endsWith('.json')).map((name) => join(digests, name));
      const published = files.map((file) => {
        const digest = JSON.parse(readFileSync(file, 'utf8')) as { block: number; takenAt: string };
        return { file, block: digest.block, takenAt: Date.parse(digest.takenAt) };
      });
      const run = await runRastro(['verify', '--full', '--json', '--digest', ...files], { ...env('verify'), RASTRO_LOG_LEVEL: 'error' });
      return { code: run.code, findings: (JSON.parse(run.stdout) as { findings: { kind: string; subject: { id: string } }[] }).findings, digests: published };
    },
    audit: (args) => runRastro(['audit', '--ask-providers', '--check', 'trail,acquirer,provider-keys,broker', '--processors', FIXTURE, '--inbox-durable', INBOX, ...args], { ...env('audit'), RASTRO_DIGEST_PUBLISH: `folder:${digests}`, RASTRO_LOG_LEVEL: 'error' }),
  };
}

/** Waits until every role caught up on the new primary: charges settled, deposits noticed, the outbox relayed and consumed. */
async function settled(f: Failover): Promise<void> {
  const one = async <T>(sql: string) => (await f.db.query<T>(sql))[0]!;
  await eventually(async () => (await one<{ n: number }>("select count(*)::int as n from rastro.effects where effect_type = 'charge.capture' and state <> 'done'")).n === 0, 'every charge settled', 60_000);
  await eventually(async () => (await one<{ n: number }>(
    "select count(*)::int as n from rastro.events d where d.type = 'AccountDeposited' and not exists (select 1 from rastro.effects f where f.key = d.id || ':notice.deposit' and f.state = 'done')")).n === 0, 'every deposit noticed', 60_000);
  // The relays published every outbox message the new primary has; the inbox took all the stream holds.
  await eventually(async () => {
    const stream = new Set(await f.streamIds());
    const outbox = await f.db.query<{ id: string }>('select id::text as id from rastro.outbox');
    return outbox.every((row) => stream.has(row.id)) && (await f.inboxIdle());
  }, 'every outbox message relayed, and the inbox idle', 60_000);
}

const ids = async (db: PostgresNode, sql: string) => new Set((await db.query<{ id: string }>(sql)).map((row) => row.id));

describe.skipIf(!canStartPostgres || !canStartNats)('a PostgreSQL failover behind a switching proxy, with every role running', () => {
  it('synchronous standby: every role resumes on the promoted standby, 503 (never 500) meanwhile; nothing lost, nothing doubled, and the audit finds nothing outside', async () => {
    const f = await failover(true);
    await settled(f);
    expect(f.statuses.get(500) ?? 0).toBe(0);
    expect([...f.statuses.keys()].filter((s) => ![200, 201, 202, 409, 503, -1].includes(s))).toEqual([]);
    expect(f.statuses.get(503) ?? 0).toBeGreaterThan(0);
    for (const role of f.survivors) expect(role.child.exitCode, role.role).toBeNull();

    const events = await ids(f.db, 'select id::text as id from rastro.events');
    const charges = await ids(f.db, 'select id::text as id from rastro.charges');
    const lost = f.answered.filter((a) => !(a.kind === 'charge' ? charges : events).has(a.id));
    expect(lost.map((a) => a.key)).toEqual([]);
    // Nothing doubled: one movement per deposit key, one charge and one capture per charge key, one notice per deposit.
    const deposits = f.answered.filter((a) => a.kind === 'deposit');
    expect((await f.db.query<{ n: number }>("select count(*)::int as n from rastro.events where type = 'AccountDeposited'"))[0]!.n).toBe(deposits.length);
    const chargeKeys = f.answered.filter((a) => a.kind === 'charge').map((a) => a.key);
    expect(charges.size).toBe(chargeKeys.length);
    expect(f.acquirer.captured().map((c) => c.key).sort()).toEqual([...chargeKeys].sort());
    expect([...f.notifier.calls.values()].filter((n) => n > 1)).toEqual([]);
    expect(f.notifier.received.size).toBe(deposits.length);
    const stream = await f.streamIds();
    const outbox = await ids(f.db, 'select id::text as id from rastro.outbox');
    expect(new Set(stream)).toEqual(outbox);
    expect([...outbox].filter((id) => !events.has(id))).toEqual([]);

    const audit = await f.audit(['--json']);
    expect(audit.code, audit.stderr).toBe(0);
    // Every digest published before and after the switch is part of the promoted standby's trail.
    const verified = await f.verifyDigests();
    expect(verified.digests.length).toBeGreaterThan(0);
    expect(verified.findings).toEqual([]);
    expect(verified.code).toBe(0);
    console.log(`synchronous failover: ${f.answered.length} requests answered (${f.answered.filter((a) => a.tries > 1).length} met the switch), statuses ${JSON.stringify([...f.statuses])}`);
  }, 240_000);

  it('asynchronous standby held back: rastro audit --ask-providers names the captures, broker messages and provider keys the lost tail left behind, and nothing is performed again', async () => {
    const f = await failover(false);
    await settled(f);
    expect(f.statuses.get(500) ?? 0).toBe(0);
    for (const role of f.survivors) expect(role.child.exitCode, role.role).toBeNull();

    const events = await ids(f.db, 'select id::text as id from rastro.events');
    const charges = await ids(f.db, 'select id::text as id from rastro.charges');
    const lost = f.answered.filter((a) => !(a.kind === 'charge' ? charges : events).has(a.id));
    // The tail was lost, and only the tail: a request retried after a 503 or a refused connection
    // was answered by the new primary (every failure came after the old one died), and is kept.
    expect(lost.length).toBeGreaterThan(0);
    expect(lost.filter((a) => a.tries > 1)).toEqual([]);
    // Every role resumed on the promoted standby: what was written after the switch was relayed, consumed and noticed.
    const stream = new Set(await f.streamIds());
    const outbox = await ids(f.db, 'select id::text as id from rastro.outbox');
    expect([...outbox].filter((id) => !stream.has(id))).toEqual([]);

    // What the lost tail left outside the database, computed from the outside systems themselves.
    const chargeKeys = new Set((await f.db.query<{ key: string }>('select idempotency_key as key from rastro.charges')).map((r) => r.key));
    const captures = f.acquirer.captured().filter((c) => !chargeKeys.has(c.key)).map((c) => `capture:${c.key}`);
    const messages = [...stream].filter((id) => !outbox.has(id) && !events.has(id)).map((id) => `message:${id}`);
    // Messages the inbox stored in the lost tail: acknowledged, so never delivered again, and gone from the log.
    const unstored = [...stream].filter((id) => outbox.has(id) && !events.has(id)).map((id) => `message:${id}`);
    const effects = await ids(f.db, 'select key as id from rastro.effects');
    const keys = [...f.notifier.received.keys()].filter((key) => !effects.has(key)).map((key) => `effect:${key}`);
    expect(captures.length).toBeGreaterThan(0);
    expect(messages.length).toBeGreaterThan(0);
    expect(keys.length).toBeGreaterThan(0);

    const requests = f.acquirer.stats.captureRequests;
    const calls = [...f.notifier.calls.values()].reduce((a, b) => a + b, 0);
    const audit = await f.audit(['--json']);
    expect(audit.code, audit.stderr).toBe(1);
    const report = JSON.parse(audit.stdout) as { findings: { check: string; kind: string; subject: { type: string; id: string } }[] };
    const found = (check: string, kind?: string) => report.findings.filter((x) => x.check === check && (!kind || x.kind === kind)).map((x) => `${x.subject.type}:${x.subject.id}`).sort();
    expect(found('acquirer')).toEqual(captures.sort());
    expect(found('broker', 'message-without-row')).toEqual(messages.sort());
    expect(found('broker', 'acknowledged-not-stored')).toEqual(unstored.sort());
    expect(found('provider-keys')).toEqual(keys.sort());
    // The audit asked; it performed nothing. And nobody captured a lost charge again.
    expect(f.acquirer.stats.captureRequests).toBe(requests);
    expect([...f.notifier.calls.values()].reduce((a, b) => a + b, 0)).toBe(calls);
    for (const capture of captures) expect(f.acquirer.requestsFor.get(capture.slice('capture:'.length))!.captures).toBe(1);
    // Digests published while the standby was held back name blocks the promoted standby does not
    // have, or sealed again with other events: rastro verify names each, and none from before;
    // the audit too.
    const verified = await f.verifyDigests();
    expect(verified.code).toBe(1);
    const named = new Set(verified.findings.filter((x) => ['digest-beyond-trail', 'digest-not-in-chain'].includes(x.kind)).map((x) => x.subject.id));
    expect(verified.findings.filter((x) => !['digest-beyond-trail', 'digest-not-in-chain'].includes(x.kind))).toEqual([]);
    expect(named.size).toBeGreaterThan(0);
    for (const digest of verified.digests) {
      if (digest.takenAt < f.heldBackAt - 1000) expect(named.has(digest.file), digest.file).toBe(false);
    }
    for (const file of named) expect(verified.digests.find((d) => d.file === file)!.takenAt).toBeGreaterThanOrEqual(f.heldBackAt - 1000);
    // rastro audit read the same folder (RASTRO_DIGEST_PUBLISH) and named the same digests.
    expect(found('trail')).toEqual([...named].map((file) => `digest:${file}`).sort());
    const renoticed = [...f.notifier.calls.entries()].filter(([, n]) => n > 1).map(([key]) => key);
    const byKind = ['deposit', 'charge', 'webhook'].map((kind) => `${lost.filter((a) => a.kind === kind).length} ${kind}s`).join(', ');
    console.log(`asynchronous failover: ${lost.length} answered requests lost (${byKind}); audit found ${captures.length} captures, ${messages.length} messages without a row, ${unstored.length} acknowledged and not stored, ${keys.length} provider keys, ${named.size} of ${verified.digests.length} digests no longer in the trail; ${renoticed.length} notices sent again with their key (event kept, ledger entry lost)`);
  }, 240_000);
});
