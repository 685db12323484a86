/** One request the load made, answered 2xx in the end: its key, what it sent, and the answer. */
export interface Answered {
  kind: 'deposit' | 'charge' | 'webhook';
  key: string;
  /** The id the server answered with: the movement's event, the charge, the snapshot's event. */
  id: string;
  body: Record<string, unknown>;
  /** When the answer arrived (ms since the epoch). */
  at: number;
  /** Tries before the 2xx: more than one means it met the switch. */
  tries: number;
}

export interface Load {
  answered: Answered[];
  /** Every status seen, and `-1` for a connection refused or reset (a server killed, the database proxy cut). */
  statuses: Map<number, number>;
  /** Stops sending new keys; resolves once every key sent has its 2xx (or failed for good: a status other than 503/409). */
  stop(): Promise<void>;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Clients of the API while a database fails over: keyed deposits, charges and order webhooks,
 * each retried with the same key (and body) on 503, on 409 (its first try still in flight) and
 * on a lost connection, against the next server, until answered. Any other status is counted
 * and ends that key: the test names it.
 */
export function startLoad(servers: () => string[], accounts: string[], tag: string): Load {
  const answered: Answered[] = [];
  const statuses = new Map<number, number>();
  let running = true;
  const count = (status: number) => statuses.set(status, (statuses.get(status) ?? 0) + 1);

  async function send(kind: Answered['kind'], key: string, path: string, body: Record<string, unknown>, idOf: (answer: Record<string, unknown>) => string): Promise<void> {
    for (let tries = 1; tries < 1000; tries++) {
      const list = servers();
      const server = list[tries % list.length]!;
      let status = -1;
      let answer: Record<string, unknown> = {};
      try {
        const res = await fetch(`${server}${path}`, {
          method: 'POST', headers: { 'content-type': 'application/json', ...(kind === 'webhook' ? {} : { 'idempotency-key': key }) }, body: JSON.stringify(body), signal: AbortSignal.timeout(15_000),
        });
        status = res.status;
        answer = (await res.json().catch(() => ({}))) as Record<string, unknown>;
      } catch {
        // A refused or reset connection: the server is down, or was killed mid-request.
      }
      count(status);
      if (status >= 200 && status < 300) return void answered.push({ kind, key, id: idOf(answer), body, at: Date.now(), tries });
      if (status !== 503 && status !== 409 && status !== -1) return;
      await sleep(150);
    }
  }

  const worker = async (kind: Answered['kind'], lane: number) => {
    for (let i = 0; running; i++) {
      const key = `${kind}-${tag}-${lane}-${i}`;
      if (kind === 'deposit') await send(kind, key, `/accounts/${accounts[(lane + i) % accounts.length]}/deposit`, { amount: 1 + ((lane * 31 + i * 7) % 100) }, (a) => String(a.id));
      if (kind === 'charge') await send(kind, key, '/charges', { amountCents: 100 + i, customerId: `cust-${lane}` }, (a) => String(a.id));
      if (kind === 'webhook') await send(kind, key, '/intake/pied/orders', { orderId: key, status: 'requested', lastUpdate: new Date().toISOString() }, (a) => String(a.eventId));
      await sleep(40);
    }
  };
  const workers = Promise.all([
    worker('deposit', 0), worker('deposit', 1), worker('charge', 0), worker('charge', 1), worker('webhook', 0),
  ]);
  return {
    answered, statuses,
    async stop() {
      running = false;
      await workers;
    },
  };
}
