import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMemoryPublisher } from '../../packages/rastro/src/brokers/memory.js';
import { startSellerNotifier, type SellerNotifier } from '../../packages/server/src/demo/seller-notifier.js';
import { relayAdmin } from '../../packages/rastro/src/outbox/relay-admin.js';
import { runRelay } from '../../packages/rastro/src/outbox/relay.js';
import { runLive } from '../../packages/rastro/src/processing/live-runner.js';
import { runReplay } from '../../packages/rastro/src/processing/replay-runner.js';
import { runStatus } from '../../packages/rastro/src/processing/run-status.js';
import { createEventStore } from '../../packages/rastro/src/store/event-store.js';
import { backends, DATABASE_URL, freshSchema, postgresBackend } from '../support/databases.js';
import { eventually } from '../support/eventually.js';
import { TIPS_POLICY, tipsWorld } from '../support/ops-fixture.js';

const CHILD = join(import.meta.dirname, '../../packages/server/dist/demo/run-child.js');

describe.each(backends())('a run\'s status from its liveness on $name', (backend) => {
  it('is running while its runner lives, then stopped since its stop; a replay is completed', async () => {
    const { db, schema } = await freshSchema(backend);
    const store = createEventStore(db, { schema });
    const world = tipsWorld();
    await store.append('tip-1', [{ type: 'tip.paid', data: { cents: 100 } }]);
    const runs = runStatus(store);
    const live = await runLive(world.processor, { store, policy: TIPS_POLICY, partitions: 2, pollIntervalMs: 20 });
    try {
      await eventually(async () => (await runs.get('live:tips'))?.counters.events === 1, 'the live run to handle the tip');
      expect(await runs.get('live:tips')).toMatchObject({ status: 'running', since: null });
    } finally {
      await live.stop();
    }
    const stoppedAfter = new Date();
    const stopped = await runs.get('live:tips');
    expect(stopped).toMatchObject({ status: 'stopped' });
    expect(stopped!.since!.getTime()).toBeLessThanOrEqual(stoppedAfter.getTime());
    expect(stopped!.since!.getTime()).toBeGreaterThan(stopped!.startedAt.getTime() - 1);

    await runReplay(world.processor, { store, runId: 'again', policy: TIPS_POLICY });
    expect(await runs.get('again')).toMatchObject({ status: 'completed' });
    // A live run started again is running again.
    const again = await runLive(world.processor, { store, policy: TIPS_POLICY, partitions: 2, pollIntervalMs: 20 });
    try {
      await eventually(async () => (await runs.get('live:tips'))?.status === 'running', 'the live run to run again');
    } finally {
      await again.stop();
    }
  });

  it('lists a relay as running, then stopped', async () => {
    const { db, schema } = await freshSchema(backend);
    const store = createEventStore(db, { schema });
    const relay = await runRelay({ store, publisher: createMemoryPublisher(), pollIntervalMs: 20 });
    const admin = relayAdmin(store);
    try {
      await eventually(async () => (await admin.status())[0]?.status === 'running', 'the relay to be listed as running');
    } finally {
      await relay.stop();
    }
    const [status] = await admin.status();
    expect(status).toMatchObject({ name: 'outbox', status: 'stopped' });
    expect(status!.since).toBeInstanceOf(Date);
  });
});

const postgres = postgresBackend();
describe.skipIf(!postgres)('a killed runner on real PostgreSQL', () => {
  let seller: SellerNotifier;
  beforeAll(async () => {
    seller = await startSellerNotifier({ deduplicates: true });
  });
  afterAll(() => seller?.close());

  it('shows its run as dead since its last sign of life', async () => {
    const { db, schema } = await freshSchema(postgres!);
    const store = createEventStore(db, { schema });
    const child = spawn(process.execPath, [CHILD], {
      env: { ...process.env, MODE: 'live', RASTRO_SCHEMA: schema, RASTRO_DATABASE: DATABASE_URL, SELLER_URL: seller.url },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const exited = new Promise((resolve) => child.once('exit', resolve));
    try {
      await new Promise<void>((resolve, reject) => {
        child.stdout!.on('data', (chunk: Buffer) => chunk.toString().includes('ready') && resolve());
        child.once('exit', (code) => reject(new Error(`the live runner exited (${code}) before it was ready`)));
      });
      const runs = runStatus(store);
      await eventually(async () => (await runs.get('live:commissions'))?.status === 'running', 'the live run to be running');
      const seen = (await runs.get('live:commissions'))!.lastSeenAt!;
      child.kill('SIGKILL');
      await exited;
      const killedAt = Date.now();
      const dead = await eventually(async () => {
        const run = await runs.get('live:commissions');
        return run?.status === 'dead' && run;
      }, 'the killed run to be dead');
      expect(dead.since!.getTime()).toBeGreaterThanOrEqual(seen.getTime());
      expect(dead.since!.getTime()).toBeLessThanOrEqual(killedAt);
      expect(dead.lastSeenAt).toEqual(dead.since);
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    }
  });
});
