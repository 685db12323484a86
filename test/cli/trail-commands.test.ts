import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createEventStore } from '../../packages/rastro/src/store/event-store.js';
import { defineEvents } from '../../packages/rastro/src/store/event-types.js';
import { runRastro } from '../support/cli.js';
import { DATABASE_URL, freshSchema, postgresBackend } from '../support/databases.js';

const backend = postgresBackend();
const dir = mkdtempSync(join(tmpdir(), 'rastro-trail-cli-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('rastro seal, digest, verify, prove and verify-proof', () => {
  it('refuse misuse with exit code 2, naming it', async () => {
    const notUuid = await runRastro(['prove', 'order-1'], { RASTRO_DATA_DIR: 'memory://' });
    expect(notUuid.code).toBe(2);
    expect(notUuid.stderr).toContain('"order-1" is not an event id (a UUID)');
    const missing = await runRastro(['verify-proof', join(dir, 'none.json'), join(dir, 'none.json')], {});
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('cannot be read');
    writeFileSync(join(dir, 'not-a-digest.json'), '{"block": 1}');
    const bad = await runRastro(['verify', '--digest', join(dir, 'not-a-digest.json')], { RASTRO_DATA_DIR: 'memory://' });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('is not a rastro digest');
  });

  it.skipIf(!backend)('seal the log, sign a digest, verify clean, and prove an event offline; a proof tampered with fails', async () => {
    const { db, schema } = await freshSchema(backend!);
    const store = createEventStore(db, { schema });
    for (let i = 0; i < 12; i++) await store.append(`charge-${i % 3}`, [{ type: 'charge.captured', data: { cents: 100 * i } }]);
    const { privateKey, publicKey } = generateKeyPairSync('ed25519');
    writeFileSync(join(dir, 'key.pem'), privateKey.export({ type: 'pkcs8', format: 'pem' }));
    writeFileSync(join(dir, 'public.pem'), publicKey.export({ type: 'spki', format: 'pem' }));
    const env = { DATABASE_URL, RASTRO_SCHEMA: schema, RASTRO_DIGEST_KEY_FILE: join(dir, 'key.pem') };

    expect((await runRastro(['digest'], env)).stderr).toContain('[RASTRO_NOT_SEALED]');
    const sealed = await runRastro(['seal', '--once'], env);
    expect(sealed.code).toBe(0);
    expect(sealed.stdout).toContain('sealed 1 blocks, 12 events');
    const digest = await runRastro(['digest'], env);
    expect(digest.code).toBe(0);
    writeFileSync(join(dir, 'digest.json'), digest.stdout);
    expect(JSON.parse(digest.stdout)).toMatchObject({ format: 'rastro-digest/1', schema, block: 1, signature: { algorithm: 'Ed25519' } });

    const verified = await runRastro(['verify', '--digest', join(dir, 'digest.json')], env);
    expect(verified.code).toBe(0);
    expect(verified.stdout).toContain('clean: the trail holds');

    const [event] = await store.readStream('charge-1');
    const proof = await runRastro(['prove', event!.id, '--digest', join(dir, 'digest.json')], env);
    expect(proof.code).toBe(0);
    writeFileSync(join(dir, 'proof.json'), proof.stdout);
    const holds = await runRastro(['verify-proof', join(dir, 'proof.json'), join(dir, 'digest.json'), '--public-key', join(dir, 'public.pem')], {});
    expect(holds.code).toBe(0);
    expect(holds.stdout).toContain(`the proof holds: event ${event!.id}`);
    writeFileSync(join(dir, 'forged.json'), readFileSync(join(dir, 'proof.json'), 'utf8').replace('"cents\\": 100', '"cents\\": 1000000'));
    const forged = await runRastro(['verify-proof', join(dir, 'forged.json'), join(dir, 'digest.json')], {});
    expect(forged.code).toBe(1);
    expect(forged.stderr).toContain('the event does not hash to its link');

    await db.query(`alter table "${schema}".events disable trigger user`);
    await db.query(`update "${schema}".events set data = '{"cents": 5}' where id = $1`, [event!.id]);
    await db.query(`alter table "${schema}".events enable always trigger events_immutable_rows`);
    const found = await runRastro(['verify', '--full'], env);
    expect(found.code).toBe(1);
    expect(found.stdout).toMatch(/event-altered\s+event /);
    expect(found.stderr).toContain('[RASTRO_TRAIL_FINDINGS]');
  });

  it.skipIf(!backend)('forget a data subject, and refuse without a master key', async () => {
    const { db, schema } = await freshSchema(backend!);
    const key = randomBytes(32).toString('hex');
    writeFileSync(join(dir, 'master.key'), key);
    const events = defineEvents<{ 'customer.registered': { customerId: string; email: string | null } }>({ 'customer.registered': { personal: { subject: 'customerId', fields: ['email'] } } });
    const store = createEventStore(db, { schema, events, personalData: { masterKey: key } });
    await store.append('customer-1', [{ type: 'customer.registered', data: { customerId: 'c-1', email: 'c1@example.com' } }]);
    const without = await runRastro(['forget', 'c-1'], { DATABASE_URL, RASTRO_SCHEMA: schema });
    expect(without.code).toBe(1);
    expect(without.stderr).toContain('RASTRO_MASTER_KEY_FILE');
    const forgot = await runRastro(['forget', 'c-1'], { DATABASE_URL, RASTRO_SCHEMA: schema, RASTRO_MASTER_KEY_FILE: join(dir, 'master.key') });
    expect(forgot.code).toBe(0);
    expect(forgot.stdout).toContain('forgot c-1: its key is deleted');
    expect((await store.readStream('customer-1'))[0]!.data).toEqual({ customerId: 'c-1', email: null });
  });
});
