import { randomBytes, randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createMemoryPublisher } from '../../packages/rastro/src/brokers/memory.js';
import { quoteSchema } from '../../packages/rastro/src/db/schema-name.js';
import { runRelay } from '../../packages/rastro/src/outbox/relay.js';
import { runLiveRound } from '../../packages/rastro/src/processing/live-round.js';
import { defineProcessor } from '../../packages/rastro/src/processing/processor.js';
import { runReplay } from '../../packages/rastro/src/processing/replay-runner.js';
import { runDiffPage } from '../../packages/rastro/src/processing/run-diff.js';
import { createEventStore } from '../../packages/rastro/src/store/event-store.js';
import { defineEvents } from '../../packages/rastro/src/store/event-types.js';
import { LOG_START } from '../../packages/rastro/src/store/event.js';
import { SubjectForgottenError } from '../../packages/rastro/src/store/personal-data.js';
import { proveEvent, verifyProof } from '../../packages/rastro/src/trail/proof.js';
import { sealNext } from '../../packages/rastro/src/trail/sealer.js';
import { trailSql } from '../../packages/rastro/src/trail/sql.js';
import { takeDigest } from '../../packages/rastro/src/trail/take-digest.js';
import { verifyTrail } from '../../packages/rastro/src/trail/verify.js';
import { backends, freshSchema } from '../support/databases.js';
import { eventually } from '../support/eventually.js';

interface Registered { customerId: string; email: string | null; name: string | null; plan: string }

const events = defineEvents<{ 'customer.registered': Registered }>({
  'customer.registered': { personal: { subject: 'customerId', fields: ['email', 'name'] } },
});
const ANA = { customerId: 'c-ana', email: 'ana@example.com', name: 'Ana Lima', plan: 'pro' };
const BEA = { customerId: 'c-bea', email: 'bea@example.com', name: 'Bea Souza', plan: 'free' };

describe.each(backends())('erasure that keeps the proof, on %s', (backend) => {
  it('stores personal fields encrypted, reads them back, and after forget shows them as null on every read path, while the trail still verifies', async () => {
    const { db, schema } = await freshSchema(backend);
    const store = createEventStore(db, { schema, events, personalData: { masterKey: randomBytes(32) } });
    const anaId = randomUUID();
    await store.append('customer-ana', [{ id: anaId, type: 'customer.registered', data: ANA }]);
    await store.append('customer-bea', [{ type: 'customer.registered', data: BEA }]);
    const s = quoteSchema(schema);
    const stored = (await db.query<{ data: string }>(`select data::text as data from ${s}.events order by position`)).rows.map((row) => row.data).join();
    expect(stored).not.toContain('ana@example.com');
    expect(stored).not.toContain('Ana Lima');
    expect(stored).toContain('"plan": "pro"');
    expect((await store.readStream('customer-ana'))[0]!.data).toEqual(ANA);
    // A retry of the same event is the same event: it seals to the same bytes.
    const again = await store.append('customer-ana', [{ id: anaId, type: 'customer.registered', data: ANA }]);
    expect(again.streamVersion).toBe(1);

    while ((await sealNext(db, trailSql(s), 100)) > 0);
    const digest = (await takeDigest(store))!;
    expect(await store.forget('c-ana')).toMatchObject({ hadKey: true });

    const erased = { ...ANA, email: null, name: null };
    expect((await store.readStream('customer-ana'))[0]!.data).toEqual(erased);
    expect((await store.readAll()).map((e) => e.data)).toEqual([erased, BEA]);
    const seen: unknown[] = [];
    const subscription = store.subscribe(LOG_START, (event) => void seen.push(event.data));
    await eventually(() => seen.length === 2, 'the subscription');
    await subscription.stop();
    expect(seen).toEqual([erased, BEA]);

    const handled: Registered[] = [];
    const copier = defineProcessor({
      name: 'customers', events, effects: [],
      handlers: { 'customer.registered': async (event, ctx) => { handled.push(event.data); await ctx.upsert('customer', event.data.customerId, { ...event.data }, { version: event.streamVersion }); } },
    });
    await runLiveRound(copier, { store, policy: {} });
    await runReplay(copier, { store, policy: {}, runId: 'sim', simulate: true });
    expect(handled).toEqual([erased, BEA, erased, BEA]);
    const diff = JSON.stringify(await runDiffPage(store, 'sim', { limit: 100 }));
    expect(diff).not.toContain('ana@example.com');

    const publisher = createMemoryPublisher();
    const relay = await runRelay({ store, publisher, events: { types: ['customer.registered'] }, pollIntervalMs: 20 });
    await eventually(() => publisher.published.length === 2, 'the relay');
    await relay.stop();
    expect(JSON.stringify(publisher.published)).not.toContain('ana@example.com');
    expect(publisher.published[0]!.payload).toEqual(erased);

    const verification = await verifyTrail(store, { full: true, digests: [{ digest, source: 'before-forget.json' }] });
    expect(verification.findings).toEqual([]);
    const proof = await proveEvent(store, anaId, { digest });
    expect(JSON.stringify(proof)).not.toContain('ana@example.com');
    expect(verifyProof(proof, digest)).toEqual([]);
  });

  it("refuses a forgotten subject's new personal data, and appends nothing", async () => {
    const { db, schema } = await freshSchema(backend);
    const store = createEventStore(db, { schema, events, personalData: { masterKey: randomBytes(32).toString('hex') } });
    await store.append('customer-ana', [{ type: 'customer.registered', data: ANA }]);
    await store.forget('c-ana');
    await expect(store.append('customer-ana-2', [{ type: 'customer.registered', data: ANA }])).rejects.toBeInstanceOf(SubjectForgottenError);
    expect(await store.streamVersion('customer-ana-2')).toBe(0);
    expect((await store.readStream('forgotten:c-ana', {}).catch(() => []))).toEqual([]);
    const untyped = createEventStore(db, { schema });
    expect((await untyped.readStream('forgotten:c-ana')).map((e) => [e.type, e.data])).toEqual([['rastro.subject.forgotten', { subject: 'c-ana' }]]);
  });

  it('refuses a store whose types declare personal fields but has no master key', async () => {
    const { db, schema } = await freshSchema(backend);
    expect(() => createEventStore(db, { schema, events })).toThrow(/declare personal fields: give personalData.masterKey/);
  });
});
