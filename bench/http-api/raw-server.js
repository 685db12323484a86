// The raw baseline server: bare node:http and a pg pool of 10 (rastro's default) against a table
// shaped like rastro's events table, in a fresh schema dropped on close. Same routes, bodies and
// status codes as rastro's account API, without Fastify, schemas, snapshots or the streams table:
// - POST /accounts: one INSERT of an AccountOpened row (version 1);
// - POST /accounts/:id/deposit: one INSERT of an AccountDeposited row, its version counted in
//   memory (no read before the write, no expected-version check);
// - GET /accounts/:id/balance: one `select max(stream_version), sum(amount)` over the account's rows.
import { randomBytes, randomUUID } from 'node:crypto';
import http from 'node:http';
import pg from 'pg';
import { DATABASE_URL } from '../shared/database.js';
import { guardPool } from '../shared/pools.js';
import { eventsTableSql, rawTypes } from '../shared/raw-events.js';
import { serveChild } from '../shared/server-child.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const ROUTE = /^\/accounts(?:\/([^/]+)\/(deposit|balance))?$/;

class HttpError extends Error {
  constructor(status, detail) {
    super(detail);
    this.status = status;
  }
}

function send(res, status, body, headers = {}) {
  const payload = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(payload), ...headers });
  res.end(payload);
}

async function readJson(req) {
  if (!/^application\/json\s*(;|$)/i.test(req.headers['content-type'] ?? '')) throw new HttpError(415, 'send the body as application/json');
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    throw new HttpError(400, 'the body is not JSON');
  }
}

await serveChild(async () => {
  const schema = `bench_http_raw_${randomBytes(4).toString('hex')}`;
  const guarded = guardPool(new pg.Pool({ connectionString: DATABASE_URL, max: 10, types: rawTypes }), `raw server pool on ${schema}`);
  const { pool } = guarded;
  await pool.query(`create schema ${schema}; ${eventsTableSql(schema)}`);
  const insertSql = `insert into ${schema}.events (tx_order, stream_id, stream_version, id, type, data, occurred_at)
    values (pg_current_xact_id()::text::bigint, $1, $2, $3, $4, $5, $6)`;
  const balanceSql = `select max(stream_version) as version,
      coalesce(sum((data->>'amount')::bigint) filter (where type = 'AccountDeposited'), 0)::bigint as balance
    from ${schema}.events where stream_id = $1`;
  const versions = new Map();

  async function handle(req, res) {
    const [path] = req.url.split('?');
    const match = ROUTE.exec(path);
    if (!match) throw new HttpError(404, `no route for ${req.method} ${path}`);
    const [, id, action] = match;
    if (!action && req.method === 'POST') {
      const { owner } = await readJson(req);
      if (typeof owner !== 'string' || owner.trim().length === 0 || owner.length > 200) throw new HttpError(422, 'owner must be a non-empty string');
      const accountId = randomUUID();
      const createdAt = new Date().toISOString();
      await pool.query(insertSql, [`account-${accountId}`, 1, randomUUID(), 'AccountOpened', JSON.stringify({ owner }), createdAt]);
      versions.set(accountId, 1);
      return send(res, 201, { id: accountId, owner, createdAt });
    }
    if (!UUID.test(id ?? '')) throw new HttpError(404, 'no such account');
    if (action === 'deposit' && req.method === 'POST') {
      const { amount } = await readJson(req);
      if (!Number.isInteger(amount) || amount < 1 || amount > 1_000_000_000) throw new HttpError(422, 'amount must be an integer from 1 to 1000000000');
      const current = versions.get(id);
      if (current === undefined) throw new HttpError(404, 'no such account');
      const version = current + 1;
      versions.set(id, version);
      const eventId = randomUUID();
      const occurredAt = new Date().toISOString();
      await pool.query(insertSql, [`account-${id}`, version, eventId, 'AccountDeposited', JSON.stringify({ amount }), occurredAt]);
      return send(res, 201, { id: eventId, type: 'AccountDeposited', amount, version, occurredAt });
    }
    if (action === 'balance' && req.method === 'GET') {
      const { rows } = await pool.query(balanceSql, [`account-${id}`]);
      if (rows[0].version === null) throw new HttpError(404, 'no such account');
      return send(res, 200, { accountId: id, balance: rows[0].balance, version: rows[0].version }, { etag: `W/"${rows[0].version}"` });
    }
    throw new HttpError(405, `${req.method} is not allowed on ${path}`);
  }

  const server = http.createServer({ keepAliveTimeout: 72_000 }, (req, res) => {
    handle(req, res).catch((err) => send(res, err.status ?? 500, { status: err.status ?? 500, detail: err.message }));
  });
  await new Promise((resolve, reject) => server.once('error', reject).listen(0, '127.0.0.1', resolve));
  return {
    info: { url: `http://127.0.0.1:${server.address().port}`, schema },
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      try {
        await pool.query(`drop schema ${schema} cascade`);
      } finally {
        await guarded.end();
      }
    },
  };
});
