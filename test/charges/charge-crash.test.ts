import { randomBytes } from 'node:crypto';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { AckPolicy, jetstream, jetstreamManager } from '@nats-io/jetstream';
import { describe, expect, it } from 'vitest';
import { runAudit } from '../../packages/rastro/src/audit/run-audit.js';
import type { Charge, ChargeStatus } from '../../packages/rastro/src/charges/charges.js';
import { relayAdmin } from '../../packages/rastro/src/outbox/relay-admin.js';
import { reconcileEffects } from '../../packages/rastro/src/processing/ledger/reconciler.js';
import { postgresBackend } from '../support/databases.js';
import { NATS_URL } from '../support/brokers.js';
import { eventually } from '../support/eventually.js';
import { connectionsGone } from '../support/relay-process.js';
import type { ServeProcess } from '../support/serve-process.js';
import { openLane, pendingCount, pick, sleep, startClient, startServe, type Lane, type LaneOptions } from '../support/charge-lanes.js';

const postgres = postgresBackend();
const TRIALS = Number(process.env.RASTRO_CRASH_TRIALS ?? 100);
/**
 * Trials run in three lanes at once, each with its own schema, acquirer fake and serve process.
 * Where serve reconciles (every second), kills also land inside its reconciliation, as it
 * performs a capture again; where it does not, the test reconciles after each kill. The last lane
 * fails a charge the acquirer confirms it never captured, instead of capturing it again.
 */
const LANES: readonly LaneOptions[] = [
  { serveReconciles: true, whenNotFound: 'retry' },
  { serveReconciles: false, whenNotFound: 'retry' },
  { serveReconciles: true, whenNotFound: 'fail' },
];
const CHARGES_PER_TRIAL = 4;
const TERMINAL: Record<ChargeStatus, string | undefined> = { CAPTURED: 'ChargeCaptured', FAILED: 'ChargeFailed', NEEDS_REVIEW: 'ChargeNeedsReview', PENDING: undefined };

type KillPoint = 'capture' | 'delay' | 'publishing';

interface Tally {
  kills: Record<string, number>;
  pendingAfterKills: number;
}

/** One trial: serve starts, clients charge, serve is killed with SIGKILL at the trial's point. */
async function trial(lane: Lane, n: number, tag: string, tally: Tally): Promise<void> {
  const proc = startServe(lane, `cc_${tag}_${lane.index}_${n}`);
  lane.up(await proc.url);
  const point: KillPoint = pick(['capture', 'delay', 'publishing'] as const);
  let killedAt: string | undefined;
  let killedOnKey: string | undefined;
  const kill = (at: string) => {
    if (killedAt) return;
    killedAt = at;
    lane.down();
    proc.child.kill('SIGKILL');
  };
  // Inside the acquirer's capture, before its answer leaves: the money moved, rastro never hears.
  if (point === 'capture')
    lane.onCapture = (key) => {
      killedOnKey = key;
      kill('capture');
    };
  if (point === 'delay') setTimeout(() => kill('delay'), Math.random() * 800);
  // As the relay publishes: the broker got a message (with NATS), or a charge just committed its outcome.
  if (point === 'publishing') {
    if (NATS_URL) lane.onPublished = () => kill('publishing');
    else lane.onAnswer = (status) => status === 201 && setTimeout(() => kill('publishing'), Math.random() * 20);
  }
  const fallback = setTimeout(() => kill(`${point} not reached in 2 s, killed then`), 2_000);
  for (let i = 0; i < CHARGES_PER_TRIAL; i++) startClient(lane, n);
  const code = await proc.exited;
  clearTimeout(fallback);
  if (!killedAt) throw new Error(`serve exited by itself (${code}): ${proc.output().slice(-800)}`);
  lane.onCapture = lane.onPublished = lane.onAnswer = undefined;
  if (killedOnKey) {
    const { rows } = await lane.db.query<{ run_id: string }>(
      `select e.run_id from "${lane.schema}".charges c join "${lane.schema}".effects e on e.key = 'charge:' || c.id::text where c.idempotency_key = $1`,
      [killedOnKey],
    );
    killedAt = rows[0]?.run_id === 'reconcile' ? 'capture (reconciliation performing it again)' : 'capture (request)';
  }
  tally.kills[killedAt!] = (tally.kills[killedAt!] ?? 0) + 1;
  await connectionsGone(lane.db, proc.app);
  tally.pendingAfterKills += await pendingCount(lane);
  if (!lane.serveReconciles) await reconcileEffects(lane.store, { types: lane.charges.effectTypes });
}

/** After the trials: a last serve, every client answered, reconciliation done, the relay drained. */
async function finish(lane: Lane, tag: string): Promise<ServeProcess> {
  const proc = startServe(lane, `cc_${tag}_${lane.index}_last`);
  lane.up(await proc.url);
  await Promise.race([Promise.all(lane.running), sleep(60_000).then(() => Promise.reject(new Error('clients still retrying after 60 s')))]);
  await eventually(
    async () => {
      await reconcileEffects(lane.store, { types: lane.charges.effectTypes });
      return (await pendingCount(lane)) === 0;
    },
    'no PENDING charge left',
    120_000,
  ).catch(async (err: Error) => {
    const { rows } = await lane.db.query(
      `select e.key, c.idempotency_key, e.state, e.run_id, e.owner_token, e.checks, e.checked_by, e.check_after - now() as wait, now() - e.reserved_at as age, e.error
         from "${lane.schema}".effects e join "${lane.schema}".charges c on e.key = 'charge:' || c.id::text where e.state in ('reserved', 'uncertain')`,
    );
    const detail = rows.map((row) => ({ ...row, requests: lane.fake.requestsFor.get((row as { idempotency_key: string }).idempotency_key), client: lane.clients.get((row as { idempotency_key: string }).idempotency_key) }));
    throw new Error(`${err.message} in lane ${lane.index}: ${JSON.stringify(detail)}`);
  });
  // Every client asks once more: the charge as it stands, never a second capture.
  const url = await lane.url();
  for (const client of lane.clients.values()) {
    const res = await fetch(`${url}/charges`, { method: 'POST', headers: { 'content-type': 'application/json', 'idempotency-key': client.key }, body: JSON.stringify(client.body) });
    const charge = (await res.json()) as Charge;
    expect(res.headers.get('idempotent-replayed'), client.key).toBe('true');
    expect(res.status, client.key).toBe(charge.status === 'NEEDS_REVIEW' ? 202 : 201);
    client.answer = { status: res.status, charge };
  }
  await eventually(async () => {
    const relay = (await relayAdmin(lane.store).status()).find((r) => r.name === 'outbox');
    return relay !== undefined && relay.pending === 0 && relay.parked === 0;
  }, 'the relay publishing every message', 60_000);
  return proc;
}

/** Everything the acquirer did, against every local record. */
async function check(lane: Lane, received: Set<string> | undefined): Promise<Record<ChargeStatus, number>> {
  const s = `"${lane.schema}"`;
  const charges = await lane.charges.list({ limit: 1000 });
  const byKey = new Map(charges.map((charge) => [charge.idempotencyKey, charge]));
  expect(charges.length).toBe(lane.clients.size);
  expect(byKey.size).toBe(charges.length);
  expect(lane.serverErrors).toEqual([]);
  for (const client of lane.clients.values()) {
    expect(client.refused, client.key).toBeUndefined();
    const charge = byKey.get(client.key);
    expect(charge, `a charge for every key a client sent: ${client.key}`).toBeDefined();
    expect(charge).toMatchObject(client.body);
    expect(client.answer?.charge, 'the last answer is the charge as it stands').toEqual(charge);
    const capture = lane.fake.captures.get(client.key);
    if (charge!.status === 'CAPTURED') {
      expect(capture, `captured at the acquirer: ${client.key}`).toBeDefined();
      expect(charge).toMatchObject({ captureId: capture!.captureId, amountCents: capture!.amountCents, currency: capture!.currency });
    } else if (charge!.status === 'FAILED') {
      // On the acquirer's word only: it declined, or (where the lane says so) confirmed it never captured.
      const declined = client.declines && charge!.reason!.includes('declined');
      const neverCaptured = lane.whenNotFound === 'fail' && charge!.reason === 'the provider confirmed it did not happen';
      expect(declined || neverCaptured, `FAILED with the acquirer's confirmation: ${client.key} ${charge!.reason}`).toBe(true);
      expect(capture, `FAILED and never captured: ${client.key}`).toBeUndefined();
    } else {
      expect(charge!.status, `${client.key}: ${charge!.reason}`).toBe('NEEDS_REVIEW');
      expect(client.lookupsUnknown, `NEEDS_REVIEW only where lookups answer unknown: ${client.key} ${charge!.reason}`).toBe(true);
      expect(charge!.reason).toMatch(/^past the business deadline: /);
    }
  }
  // Every capture at the acquirer is one local charge: CAPTURED with that capture, or visibly in review.
  for (const capture of lane.fake.captured()) {
    const charge = byKey.get(capture.key);
    expect(charge, `a local charge for the capture ${capture.captureId}`).toBeDefined();
    if (charge!.status !== 'NEEDS_REVIEW') expect(charge).toMatchObject({ status: 'CAPTURED', captureId: capture.captureId });
  }
  const captureIds = charges.filter((charge) => charge.captureId !== null).map((charge) => charge.captureId);
  expect(new Set(captureIds).size, 'no two charges share a capture').toBe(captureIds.length);
  // The acquirer saw capture requests only for charges, and never one for a key it had already captured.
  for (const [key, requests] of lane.fake.requestsFor) {
    expect(byKey.has(key), `capture requests only for local charges: ${key}`).toBe(true);
    expect(requests.repeats, `no capture without asking first: ${key}`).toBe(0);
  }
  const { rows: unsettled } = await lane.db.query<{ n: number }>(`select count(*)::int as n from ${s}.effects where state in ('reserved', 'uncertain')`);
  expect(unsettled[0]!.n).toBe(0);

  // The outbox: ChargeStarted and one terminal event per charge, nothing else.
  const { rows: messages } = await lane.db.query<{ id: string; aggregate_id: string; type: string }>(`select id, aggregate_id, type from ${s}.outbox order by position`);
  const types = new Map<string, string[]>();
  for (const m of messages) types.set(m.aggregate_id, [...(types.get(m.aggregate_id) ?? []), m.type]);
  expect(types.size).toBe(charges.length);
  for (const charge of charges) expect(types.get(charge.id), charge.id).toEqual(['ChargeStarted', TERMINAL[charge.status]]);
  // Every outbox message reached the broker, by its message id.
  if (received) {
    const missing = messages.filter((m) => !received.has(m.id));
    expect(missing, 'outbox messages that never reached NATS').toEqual([]);
  }
  const counts: Record<ChargeStatus, number> = { PENDING: 0, CAPTURED: 0, FAILED: 0, NEEDS_REVIEW: 0 };
  for (const charge of charges) counts[charge.status]++;
  // The audit agrees: nothing lost, doubled or left behind, but the charges waiting for a person.
  const audit = await runAudit(lane.store, { full: true, record: false });
  expect(audit.findings.map((f) => `${f.check}/${f.kind}/${f.subject.id}`).sort()).toEqual(charges.filter((c) => c.status === 'NEEDS_REVIEW').map((c) => `charges/needs-review/${c.id}`).sort());
  return counts;
}

/** The message ids in a lane's JetStream stream. */
async function receivedIds(nc: NatsConnection, stream: string): Promise<Set<string>> {
  const jsm = await jetstreamManager(nc);
  await jsm.consumers.add(stream, { durable_name: 'check', ack_policy: AckPolicy.None });
  const consumer = await jetstream(nc).consumers.get(stream, 'check');
  const ids = new Set<string>();
  for (;;) {
    let got = 0;
    for await (const m of await consumer.fetch({ max_messages: 1000, expires: 1000 })) {
      ids.add(m.headers!.get('Nats-Msg-Id'));
      got++;
    }
    if (got === 0) return ids;
  }
}

describe.skipIf(!postgres)(`charges while serve is killed with SIGKILL, on real PostgreSQL${NATS_URL ? ' and NATS JetStream' : ' (NATS_URL not set: delivery to the broker is not checked)'}`, () => {
  it(`captures each charge at most once, settles every one and loses no event across ${TRIALS} kills`, async () => {
    const tag = randomBytes(4).toString('hex');
    const lanes = await Promise.all(LANES.map((options, index) => openLane(postgres!, index, options, tag)));
    const nc = NATS_URL ? await connect({ servers: NATS_URL }) : undefined;
    for (const lane of lanes) nc?.subscribe(`${lane.prefix}.>`, { callback: () => lane.onPublished?.() });
    const tally: Tally = { kills: {}, pendingAfterKills: 0 };
    const last: ServeProcess[] = [];
    try {
      await Promise.all(
        lanes.map(async (lane, index) => {
          for (let n = index; n < TRIALS; n += lanes.length) await trial(lane, n, tag, tally);
          last.push(await finish(lane, tag));
        }),
      );
      // The last processes stop cleanly on SIGTERM; nothing runs while the records are checked.
      for (const proc of last) proc.child.kill('SIGTERM');
      expect(await Promise.all(last.map((proc) => proc.exited))).toEqual(last.map(() => 0));
      const counts: Record<ChargeStatus, number> = { PENDING: 0, CAPTURED: 0, FAILED: 0, NEEDS_REVIEW: 0 };
      let duplicates = 0;
      for (const lane of lanes) {
        const laneCounts = await check(lane, nc ? await receivedIds(nc, lane.stream) : undefined);
        for (const status of Object.keys(counts) as ChargeStatus[]) counts[status] += laneCounts[status];
        duplicates += (await relayAdmin(lane.store).status()).find((r) => r.name === 'outbox')?.counters.duplicates ?? 0;
      }
      const clients = lanes.flatMap((lane) => [...lane.clients.values()]);
      const captures = lanes.reduce((sum, lane) => sum + lane.fake.captured().length, 0);
      const performedAgain = lanes.reduce((sum, lane) => sum + [...lane.fake.requestsFor.values()].filter((r) => r.captures > 1).length, 0);
      const kills = Object.entries(tally.kills).sort(([a], [b]) => a.localeCompare(b)).map(([at, n]) => `${at} ${n}`).join(', ');
      console.log(
        `charge crash trials: ${TRIALS}, charges: ${clients.length} (${Object.entries(counts).filter(([, n]) => n > 0).map(([status, n]) => `${status} ${n}`).join(', ')}), ` +
          `captures at the acquirer: ${captures}, kills: ${kills}; PENDING right after a kill (summed over kills): ${tally.pendingAfterKills}, captured again after asking: ${performedAgain}, ` +
          `client attempts: ${clients.reduce((sum, c) => sum + c.attempts, 0)}${nc ? `, republished after a kill (broker duplicates): ${duplicates}` : ''}`,
      );
      expect(counts.PENDING).toBe(0);
      expect(clients.length).toBe(TRIALS * CHARGES_PER_TRIAL);
      // The kills must land at each point often, and leave charges for reconciliation, or the test proves little.
      const at = (prefix: string) => Object.entries(tally.kills).filter(([name]) => name.startsWith(prefix)).reduce((sum, [, n]) => sum + n, 0);
      for (const point of ['capture', 'delay', 'publishing']) expect(at(point), point).toBeGreaterThanOrEqual(TRIALS / 8);
      expect(tally.kills['capture (request)'] ?? 0).toBeGreaterThan(0);
      expect(tally.pendingAfterKills).toBeGreaterThan(TRIALS / 2);
      expect(counts.NEEDS_REVIEW + counts.FAILED).toBeGreaterThan(0);
      // Kills as the relay published: batches the broker had taken were published again, and deduplicated.
      if (nc) expect(duplicates).toBeGreaterThan(0);
    } finally {
      for (const proc of lanes.flatMap((lane) => lane.processes)) if (proc.child.exitCode === null && proc.child.signalCode === null) proc.child.kill('SIGKILL');
      await Promise.all(lanes.flatMap((lane) => lane.processes.map((proc) => proc.exited)));
      for (const lane of lanes) await lane.fake.close();
      if (nc) {
        const jsm = await jetstreamManager(nc);
        for (const lane of lanes) await jsm.streams.delete(lane.stream).catch(() => undefined);
        await nc.close();
      }
    }
  }, 600_000);
});
