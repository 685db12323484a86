import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { quoteSchema } from '../../packages/rastro/src/db/schema-name.js';
import { createEventStore, type EventStore } from '../../packages/rastro/src/store/event-store.js';
import { signDigest, type Digest } from '../../packages/rastro/src/trail/digest.js';
import { proveEvent, verifyProof } from '../../packages/rastro/src/trail/proof.js';
import { lastBlock, sealNext } from '../../packages/rastro/src/trail/sealer.js';
import { trailSql } from '../../packages/rastro/src/trail/sql.js';
import { verifyTrail } from '../../packages/rastro/src/trail/verify.js';
import { takeDigest } from '../../packages/rastro/src/trail/take-digest.js';
import { backends, freshSchema } from '../support/databases.js';

/** A store with `n` events over a few streams, in batches, sealed in blocks of `perBlock`. */
async function sealedStore(backend: Parameters<typeof freshSchema>[0], n: number, perBlock = 7): Promise<EventStore> {
  const { db, schema } = await freshSchema(backend);
  const store = createEventStore(db, { schema });
  for (let i = 0; i < n; i += 3) {
    const batch = Array.from({ length: Math.min(3, n - i) }, (_, k) => ({ type: 'tick', data: { n: i + k, text: `é ${i + k} ✓` } }));
    await store.append(`s-${i % 5}`, batch);
  }
  const sql = trailSql(quoteSchema(schema));
  while ((await sealNext(db, sql, perBlock)) > 0);
  return store;
}

describe.each(backends())('the trail on %s', (backend) => {
  it('seals every event exactly once, and a full and an incremental verify find nothing', async () => {
    const store = await sealedStore(backend, 40);
    const s = quoteSchema(store.schema);
    const { rows } = await store.db.query<{ n: number; total: number; blocks: number }>(`select count(*)::int as n, (select sum(events)::int from ${s}.trail_blocks) as total,
      (select count(*)::int from ${s}.trail_blocks) as blocks from ${s}.events`);
    expect(rows[0]).toEqual({ n: 40, total: 40, blocks: 6 });
    const full = await verifyTrail(store, { full: true });
    expect(full.findings).toEqual([]);
    await store.append('s-9', [{ type: 'tick', data: { n: 40 } }]);
    const again = await verifyTrail(store, { since: full.checkpoint });
    expect(again.full).toBe(false);
    expect(again.findings).toEqual([]);
  });

  it('proves an event against a signed digest offline, and refuses another chain or an altered event', async () => {
    const store = await sealedStore(backend, 30);
    const { privateKey, publicKey } = generateKeyPairSync('ed25519');
    const digest = (await takeDigest(store, { key: privateKey }))!;
    const pem = publicKey.export({ type: 'spki', format: 'pem' }).toString();
    const events = await store.readAll();
    for (const event of [events[0]!, events[13]!, events[29]!]) {
      const proof = await proveEvent(store, event.id, { digest });
      expect(verifyProof(JSON.parse(JSON.stringify(proof)), digest, { publicKey: pem })).toEqual([]);
      const altered = { ...proof, event: { ...proof.event, data: proof.event.data.replace(/"n": \d+/, '"n": 999') } };
      expect(verifyProof(altered, digest)).toContain('the event does not hash to its link: its content is not what was appended');
    }
    const other = (await takeDigest(await sealedStore(backend, 30)))!;
    const proof = await proveEvent(store, events[5]!.id, { digest });
    expect(verifyProof(proof, { ...other, schema: store.schema } as Digest).join()).toMatch(/not at the digest's block/);
    expect(verifyProof(proof, signDigest({ ...digest, signature: undefined } as never, generateKeyPairSync('ed25519').privateKey), { publicKey: pem })).toContain('the digest is not signed by the trusted key');
    expect((await lastBlock(store.db, trailSql(quoteSchema(store.schema))))!.block).toBe(digest.block);
  });

  it('refuses a proof of an event not sealed yet, naming it', async () => {
    const store = await sealedStore(backend, 3);
    const [event] = await store.readStream('unsealed').catch(() => []);
    expect(event).toBeUndefined();
    const id = randomUUID();
    await store.append('late', [{ id, type: 'tick', data: {} }]);
    await expect(proveEvent(store, id)).rejects.toThrow(/is not sealed in a block yet/);
  });
});
