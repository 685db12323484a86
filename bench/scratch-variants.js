// Temporary: measures variants of rastro's append SQL. Deleted after use.
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { createEventStore, migrate, openDatabase } from '../dist/index.js';
import { eventStoreSql } from '../dist/store/sql.js';
import { opsPerSecond } from './shared/measure.js';
import { orderEvent } from './event-store/workload.js';

const url = 'postgres://postgres@127.0.0.1:5432/test';
const schema = 'scratch_v';
const db = await openDatabase({ url, poolSize: 10 });
await db.query(`drop schema if exists ${schema} cascade`);
await migrate(db, { schema });
const store = createEventStore(db, { schema });
const pool = new pg.Pool({ connectionString: url, max: 10 });
const sql = eventStoreSql(`${schema}`);
const dur = Number(process.env.DUR ?? 3000);
const variant = process.argv[2];
const clients = Number(process.argv[3] ?? 1);

const versions = Array.from({ length: clients }, () => new Array(100).fill(0));
let n = 0;
const params = (streamId, version) => {
  const e = orderEvent((n += 1));
  return [streamId, [randomUUID()], [e.type], [JSON.stringify(e.data)], ['{}'], [new Date().toISOString()], 1, version];
};
const variants = {
  store: (id, v) => store.append(id, [orderEvent((n += 1))], { expectedVersion: v }),
  text: (id, v) => pool.query(v === 0 ? sql.append.noStream : sql.append.exact, v === 0 ? params(id, v).slice(0, 7) : params(id, v)),
  named: (id, v) => pool.query({ name: v === 0 ? 'ns' : 'ex', text: v === 0 ? sql.append.noStream : sql.append.exact, values: v === 0 ? params(id, v).slice(0, 7) : params(id, v) }),
};
if (process.env.NO_NOTIFY) await pool.query(`alter table ${schema}.events disable trigger events_appended`);
const op = variants[variant];
const appendTo = async (c, s) => { await op(`st-${c}-${s}`, versions[c][s]); versions[c][s] += 1; };
await Promise.all(versions.map(async (_, c) => { for (let s = 0; s < 100; s++) await appendTo(c, s); }));
const rate = await opsPerSecond({ clients, durationMs: dur, op: (c) => appendTo(c, Math.floor(Math.random() * 100)) });
console.log(variant, clients, process.env.NO_NOTIFY ? 'no-notify' : '', Math.round(rate));
await db.query(`drop schema ${schema} cascade`);
await db.close();
await pool.end();
