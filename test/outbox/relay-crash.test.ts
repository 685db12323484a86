import { randomBytes } from 'node:crypto';
import { connect } from '@nats-io/transport-node';
import { AckPolicy, jetstream, jetstreamManager } from '@nats-io/jetstream';
import { describe, expect, it } from 'vitest';
import { runAudit } from '../../packages/rastro/src/audit/run-audit.js';
import { relayAdmin } from '../../packages/rastro/src/outbox/relay-admin.js';
import { createEventStore } from '../../packages/rastro/src/store/event-store.js';
import { DATABASE_URL, freshSchema, postgresBackend } from '../support/databases.js';
import { NATS_URL } from '../support/brokers.js';
import { eventually } from '../support/eventually.js';
import { checkDelivery, runWriters } from '../support/outbox-writers.js';
import { connectionsGone, spawnRelay } from '../support/relay-process.js';

const postgres = postgresBackend();
const TRIALS = Number(process.env.RASTRO_CRASH_TRIALS ?? 100);

describe.skipIf(!postgres || !NATS_URL)('a relay killed with SIGKILL, on real PostgreSQL and NATS JetStream', () => {
  it(`loses nothing and keeps each aggregate in order across ${TRIALS} kills at random moments while writers run`, async () => {
    const { db, schema } = await freshSchema(postgres!);
    const store = createEventStore(db, { schema });
    const tag = randomBytes(4).toString('hex');
    const stream = `T_${tag}`;
    const env = { RASTRO_BROKER_URL: NATS_URL!, RASTRO_SUBJECT_PREFIX: `t${tag}`, RASTRO_NATS_STREAM: stream, RASTRO_LOG_LEVEL: 'silent' };
    const nc = await connect({ servers: NATS_URL! });
    const jsm = await jetstreamManager(nc);
    const writers = await runWriters(db, schema, { aggregates: 50, messages: Number.MAX_SAFE_INTEGER, writers: 2, perTransaction: 3, earlyId: 0.1, rollback: 0.05 });
    let killedWhilePublishing = 0;
    try {
      let before = 0;
      const publishedPast = async (count: number, ms: number) => {
        const deadline = Date.now() + ms;
        while (((await relayAdmin(store).status())[0]?.counters.published ?? 0) <= count && Date.now() < deadline) {
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
      };
      for (let trial = 0; trial < TRIALS; trial++) {
        const relay = spawnRelay({ databaseUrl: DATABASE_URL!, schema, name: 'crash', app: `crash_${tag}_${trial}`, env });
        await relay.started;
        // Most kills come after the relay committed progress of its own (however slow the
        // machine is to get there), at a random moment of its publishing; the rest at a random
        // moment of its start.
        if (trial % 4 !== 0) await publishedPast(before, 30_000);
        await new Promise((resolve) => setTimeout(resolve, Math.random() * 600));
        relay.child.kill('SIGKILL');
        await relay.exited;
        await connectionsGone(db, relay.app);
        const published = (await relayAdmin(store).status())[0]?.counters.published ?? 0;
        if (published > before) killedWhilePublishing++;
        before = published;
      }
      writers.stop();
      const committed = await writers.done;
      const last = spawnRelay({ databaseUrl: DATABASE_URL!, schema, name: 'crash', app: `crash_${tag}_last`, env });
      await last.started;
      await eventually(async () => (await relayAdmin(store).status())[0]!.pending === 0, 'the last relay catching up', 120_000);
      last.child.kill('SIGTERM');
      await last.exited;

      const { rows } = await db.query<{ aggregate: string; n: number }>(`select aggregate, n from "${schema}".test_sequences`);
      const expected = new Map(rows.map((row) => [row.aggregate, row.n]));
      await jsm.consumers.add(stream, { durable_name: 'check', ack_policy: AckPolicy.None });
      const consumer = await jetstream(nc).consumers.get(stream, 'check');
      const received: { id: string; aggregate: string; n: number }[] = [];
      for (;;) {
        let got = 0;
        for await (const m of await consumer.fetch({ max_messages: 1000, expires: 1000 })) {
          const { aggregate, n } = m.json<{ aggregate: string; n: number }>();
          received.push({ id: m.headers!.get('Nats-Msg-Id'), aggregate, n });
          got++;
        }
        if (got === 0) break;
      }
      const check = checkDelivery(received, expected);
      expect(check.problems).toEqual([]);
      // The audit agrees: every message published, in order per aggregate, nothing left behind.
      expect((await runAudit(store, { full: true, record: false })).findings).toEqual([]);
      expect(check.unique).toBe(committed);
      const status = (await relayAdmin(store).status())[0]!;
      console.log(`relay crash trials: ${TRIALS}, killed after committing progress: ${killedWhilePublishing}, messages: ${committed}, republished after a kill and acked as duplicates: ${status.counters.duplicates ?? 0}`);
      // Many kills must land after the relay committed progress, or the test would prove little;
      // the duplicates show kills between the broker's ack and the checkpoint.
      expect(killedWhilePublishing).toBeGreaterThanOrEqual(TRIALS / 4);
      expect(status.counters.duplicates ?? 0).toBeGreaterThan(0);
    } finally {
      writers.stop();
      await writers.done.catch(() => undefined);
      await jsm.streams.delete(stream).catch(() => undefined);
      await nc.close();
    }
  }, 900_000);
});
