import { describe, expect, it } from 'vitest';
import type { Database } from '../../packages/rastro/src/db/database.js';
import { quoteSchema } from '../../packages/rastro/src/db/schema-name.js';
import { createEventStore } from '../../packages/rastro/src/store/event-store.js';
import { verifyTrail } from '../../packages/rastro/src/trail/verify.js';
import { runRastro } from '../support/cli.js';
import { DATABASE_URL, freshSchema, postgresBackend } from '../support/databases.js';
import { spawnRastro, type RastroProcess } from '../support/rastro-process.js';

// Sealers killed with SIGKILL at random while writers append, some transactions committing late
// (held open for seconds, or taking their id early) and some rolling back: every event is sealed
// exactly once, in the blocks' global order, and a full verification finds nothing.

const postgres = postgresBackend();
const TRIALS = Number(process.env.RASTRO_CRASH_TRIALS ?? 100);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Writers appending to 20 streams until stopped, with late commits and rollbacks. */
function writers(db: Database, schema: string, count: number) {
  const store = createEventStore(db, { schema });
  let stopped = false;
  let committed = 0;
  async function writer(n: number) {
    for (let i = 0; !stopped; i++) {
      const roll = Math.random();
      await db.transaction(async (tx) => {
        if (roll < 0.2) await tx.query('select pg_current_xact_id()');
        await store.append(`s-${(n * 7 + i) % 20}`, [{ type: 'tick', data: { writer: n, i } }, { type: 'tock', data: { writer: n, i } }], { tx });
        if (roll > 0.97) await sleep(1000 + Math.random() * 2000);
        else await sleep(Math.random() * 20);
        if (roll > 0.9 && roll <= 0.93) throw new Error('rolled back on purpose');
      }).then(() => (committed += 2), (err: Error) => {
        if (err.message !== 'rolled back on purpose') throw err;
      });
    }
  }
  const done = Promise.all(Array.from({ length: count }, (_, n) => writer(n)));
  return { stop: async () => { stopped = true; await done; return committed; } };
}

describe.skipIf(!postgres)('sealers killed with SIGKILL while writers commit late, on real PostgreSQL', () => {
  it(`seal every event exactly once through ${TRIALS} kills, and a full verify finds nothing`, async () => {
    const { db, schema } = await freshSchema(postgres!);
    const env = { DATABASE_URL: DATABASE_URL!, RASTRO_SCHEMA: schema, RASTRO_POOL_SIZE: '2', RASTRO_LOG_LEVEL: 'silent' };
    const load = writers(db, schema, 4);
    const running: RastroProcess[] = [];
    const cleanups: (() => Promise<unknown>)[] = [];
    const start = async () => {
      running.push(await spawnRastro('sealer', ['seal', '--interval', '20', '--max-events', '7'], env, /sealing the trail/, (cleanup) => cleanups.push(cleanup)));
    };
    try {
      await start();
      await start();
      for (let trial = 0; trial < TRIALS; trial++) {
        await sleep(30 + Math.random() * 150);
        const victim = running.splice(Math.floor(Math.random() * running.length), 1)[0]!;
        victim.child.kill('SIGKILL');
        await victim.exited;
        await start();
      }
      const committed = await load.stop();
      for (const sealer of running) await sealer.stop();
      const final = await runRastro(['seal', '--once'], env);
      expect(final.code).toBe(0);
      const s = quoteSchema(schema);
      const { rows: [counts] } = await db.query<{ events: number; sealed: number; blocks: number; max: number }>(
        `select (select count(*)::int from ${s}.events) as events, (select sum(events)::int from ${s}.trail_blocks) as sealed,
                (select count(*)::int from ${s}.trail_blocks) as blocks, (select max(block)::int from ${s}.trail_blocks) as max`);
      expect(counts!.events).toBe(committed);
      expect(counts!.sealed).toBe(committed);
      expect(counts!.max).toBe(counts!.blocks);
      const verification = await verifyTrail(createEventStore(db, { schema }), { full: true });
      expect(verification.findings).toEqual([]);
      console.log(`seal kills: ${TRIALS} kills, ${committed} events in ${counts!.blocks} blocks`);
    } finally {
      for (const cleanup of cleanups) await cleanup();
    }
  }, 600_000);
});
