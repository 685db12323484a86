// The load generator. It runs in the contender's process, the server under test in a child of its
// own, so the two do not share an event loop. Requests go through node:http with a keep-alive
// agent of `connections` sockets; each of `connections` loops sends one request at a time.
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { performance } from 'node:perf_hooks';

const env = (name, fallback) => Number(process.env[name] ?? fallback);

/** Sizes shared by every contender, so each one does the same work. */
export const WORKLOAD = Object.freeze({
  connections: 16,
  warmupMs: env('BENCH_HTTP_WARMUP_MS', 2000),
  durationMs: env('BENCH_HTTP_DURATION_MS', 10_000),
  /** Events per account in the balance row: AccountOpened and 49 deposits. */
  balanceEvents: 50,
  /** Sequential balance reads (one connection, one request at a time) of one such account. */
  sequential: { warmup: 20, requests: env('BENCH_SEQUENTIAL_REQUESTS', 300) },
  tail: {
    events: 100_000,
    /** Sequential balance reads of the long account with its snapshot. */
    snapshots: { warmup: 20, requests: env('BENCH_SEQUENTIAL_REQUESTS', 300) },
    /** Without snapshots every read replays the whole stream, so fewer requests. */
    replay: { warmup: 3, requests: env('BENCH_REPLAY_REQUESTS', 20) },
  },
});

/** A keep-alive HTTP client for one server. `request` resolves `{ status, text }`; `extra` adds headers. */
export function httpClient(url, maxSockets) {
  const { hostname, port } = new URL(url);
  const agent = new http.Agent({ keepAlive: true, maxSockets });
  function request(method, path, body, extra = {}) {
    return new Promise((resolve, reject) => {
      const payload = body === undefined ? undefined : JSON.stringify(body);
      const headers = payload === undefined ? { ...extra } : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload), ...extra };
      const req = http.request({ agent, hostname, port, method, path, headers }, (res) => {
        const chunks = [];
        res.on('data', (chunk) => chunks.push(chunk));
        res.on('end', () => resolve({ status: res.statusCode, text: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      });
      req.on('error', reject);
      req.end(payload);
    });
  }
  /** `request`, failing unless the status is `status`; resolves the parsed body when `parse`. */
  async function expect(status, method, path, body, parse = false, extra = {}) {
    const res = await request(method, path, body, extra);
    if (res.status !== status) throw new Error(`${method} ${path} answered ${res.status}, expected ${status}: ${res.text.slice(0, 300)}`);
    return parse ? JSON.parse(res.text) : undefined;
  }
  return { request, expect, close: () => agent.destroy() };
}

/** Nearest-rank percentile of unsorted samples. */
export function percentile(samples, p) {
  const sorted = Float64Array.from(samples).sort();
  return sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)];
}

/** Runs `connections` loops of `op(connection)` until `until`; returns how many completed. */
async function loops(connections, until, op, latencies) {
  let done = 0;
  await Promise.all(
    Array.from({ length: connections }, async (_, connection) => {
      while (performance.now() < until) {
        const start = performance.now();
        await op(connection);
        latencies?.push(performance.now() - start);
        done += 1;
      }
    }),
  );
  return done;
}

/**
 * Warm-up, then `durationMs` of measured load: requests per second (requests in flight at the
 * deadline finish and count) and their latency percentiles in milliseconds.
 */
async function underLoad(op) {
  const { connections, warmupMs, durationMs } = WORKLOAD;
  await loops(connections, performance.now() + warmupMs, op);
  const latencies = [];
  const start = performance.now();
  const done = await loops(connections, start + durationMs, op, latencies);
  const seconds = (performance.now() - start) / 1000;
  return { perSecond: done / seconds, p50: percentile(latencies, 50), p99: percentile(latencies, 99) };
}

async function openAccounts(client, count, owner) {
  const accounts = [];
  for (let i = 0; i < count; i += 1) accounts.push((await client.expect(201, 'POST', '/accounts', { owner: `${owner} ${i}` }, true)).id);
  return accounts;
}

/** `connections` accounts of `balanceEvents` events each: opened, then given deposits. */
async function readerAccounts(client) {
  const { connections, balanceEvents } = WORKLOAD;
  const readFrom = await openAccounts(client, connections, 'bench reader');
  await Promise.all(
    readFrom.map(async (id) => {
      for (let v = 1; v < balanceEvents; v += 1) await client.expect(201, 'POST', `/accounts/${id}/deposit`, { amount: 1 });
    }),
  );
  const first = await client.expect(200, 'GET', `/accounts/${readFrom[0]}/balance`, undefined, true);
  if (first.version !== balanceEvents || first.balance !== balanceEvents - 1) throw new Error(`unexpected balance ${JSON.stringify(first)}`);
  return readFrom;
}

/** Balance reads under load, each connection of an account of its own. */
async function balanceLoad(client, readFrom) {
  return underLoad((c) => client.expect(200, 'GET', `/accounts/${readFrom[c]}/balance`));
}

/**
 * The load rows against one server: deposits, each connection into an account of its own, the
 * same with a new `Idempotency-Key` on every request, then balance reads, each connection of an
 * account of `balanceEvents` events, then sequential reads of one of those accounts.
 */
export async function runLoad(url) {
  const { connections, balanceEvents } = WORKLOAD;
  const client = httpClient(url, connections);
  try {
    const depositTo = await openAccounts(client, connections, 'bench depositor');
    const deposit = await underLoad((c) => client.expect(201, 'POST', `/accounts/${depositTo[c]}/deposit`, { amount: 1 }));
    const keyed = await underLoad((c) => client.expect(201, 'POST', `/accounts/${depositTo[c]}/deposit`, { amount: 1 }, false, { 'idempotency-key': randomUUID() }));

    const readFrom = await readerAccounts(client);
    const balance = await balanceLoad(client, readFrom);
    const sequential = await sequentialBalance(url, readFrom[0], WORKLOAD.sequential, { version: balanceEvents, balance: balanceEvents - 1 });

    return {
      deposits: deposit.perSecond,
      depositP50: deposit.p50,
      depositP99: deposit.p99,
      keyedDeposits: keyed.perSecond,
      keyedP50: keyed.p50,
      keyedP99: keyed.p99,
      balances: balance.perSecond,
      balanceP50: balance.p50,
      balanceP99: balance.p99,
      sequentialP50: sequential.p50,
      sequentialP99: sequential.p99,
    };
  } finally {
    client.close();
  }
}

/**
 * Balance reads only, as in `runLoad`: for a server that remembers no account between requests.
 * `prepare()` runs between the accounts' fill and the load.
 */
export async function runBalanceLoad(url, prepare = async () => undefined) {
  const client = httpClient(url, WORKLOAD.connections);
  try {
    const readFrom = await readerAccounts(client);
    await prepare();
    const balance = await balanceLoad(client, readFrom);
    return { balances: balance.perSecond, balanceP50: balance.p50, balanceP99: balance.p99 };
  } finally {
    client.close();
  }
}

/** Sequential balance reads of one account: `warmup` unmeasured, then `requests` measured. */
export async function sequentialBalance(url, accountId, { warmup, requests }, expected) {
  const client = httpClient(url, 1);
  try {
    const body = await client.expect(200, 'GET', `/accounts/${accountId}/balance`, undefined, true);
    if (body.version !== expected.version || body.balance !== expected.balance) throw new Error(`unexpected balance ${JSON.stringify(body)}, expected ${JSON.stringify(expected)}`);
    for (let i = 0; i < warmup; i += 1) await client.expect(200, 'GET', `/accounts/${accountId}/balance`);
    const latencies = [];
    for (let i = 0; i < requests; i += 1) {
      const start = performance.now();
      await client.expect(200, 'GET', `/accounts/${accountId}/balance`);
      latencies.push(performance.now() - start);
    }
    return { p50: percentile(latencies, 50), p99: percentile(latencies, 99), max: Math.max(...latencies) };
  } finally {
    client.close();
  }
}
