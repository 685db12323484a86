// The baseline: a raw scan of the tables a full audit reads, every column of every row fetched
// by keyset pages of 10,000 through the same driver, after one warm-up scan.
import { runContender } from '../shared/contender.js';
import { AUDIT, openDeployment } from './workload.js';

const PAGE = 10_000;
const KEYS = {
  events: ['tx_order', 'position'], streams: ['stream_id'], projections: ['projection', 'key'], snapshots: ['stream_id'],
  charges: ['id'], effects: ['key'], outbox: ['tx_order', 'position'], processor_checkpoints: ['run_id', 'partition'],
};

async function scan(db, s, table) {
  const keys = KEYS[table];
  let after = null;
  let rows = 0;
  for (;;) {
    const where = after ? `where (${keys.join(', ')}) > (${keys.map((_, i) => `$${i + 1}`).join(', ')})` : '';
    const page = (await db.query(`select * from ${s}.${table} ${where} order by ${keys.join(', ')} limit ${PAGE}`, after ?? [])).rows;
    rows += page.length;
    if (page.length < PAGE) return rows;
    after = keys.map((key) => page.at(-1)[key]);
  }
}

await runContender(async () => {
  const size = AUDIT.sizes.at(-1);
  const deployment = await openDeployment('bench_audit_raw', size);
  try {
    const s = `"${deployment.schema}"`;
    const all = async () => {
      let rows = 0;
      for (const table of deployment.tables) rows += await scan(deployment.db, s, table);
      return rows;
    };
    await all();
    const started = performance.now();
    const rows = await all();
    return { full: rows / ((performance.now() - started) / 1000), rows };
  } finally {
    await deployment.close();
  }
});
