import { createHash } from 'node:crypto';
import pg from 'pg';
import { assertChannelName, IN_TRANSACTION, runAfterCommit, type Database, type QueryOptions, type QueryResult, type Transaction } from './database.js';
import { toDatabaseError } from './database-error.js';

const INT8_OID = 20;
const INT8_ARRAY_OID = 1016;

function parseInt8(text: string): number {
  const value = Number(text);
  if (!Number.isSafeInteger(value)) throw new RangeError('int8 value exceeds Number.MAX_SAFE_INTEGER');
  return value;
}

function parseInt8Array(text: string): (number | null)[] {
  if (text === '{}') return [];
  return text
    .slice(1, -1)
    .split(',')
    .map((item) => (item === 'NULL' ? null : parseInt8(item)));
}

// Per-pool parsers: rastro never changes pg's process-wide type parsers.
const types = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if (oid === INT8_OID && format !== 'binary') return parseInt8;
    if (oid === INT8_ARRAY_OID && format !== 'binary') return parseInt8Array;
    return pg.types.getTypeParser(oid, format ?? 'text');
  },
};

export interface PostgresOptions {
  /** A `postgres://` URL: rastro opens a pool of its own. */
  url?: string;
  /**
   * The application's own `pg` `Pool` instead of a URL: rastro runs its statements on it, with
   * its own type parsers passed per query (the pool's are left as they are), and never ends it.
   * Its settings apply (size, timeouts); LISTEN takes one connection of its own besides.
   */
  pool?: PgPool;
  /** @defaultValue 10 */
  poolSize?: number;
  /**
   * How long a query waits for a connection (a new one, or a free one of the pool) before it
   * fails with `RASTRO_DATABASE_UNAVAILABLE`: during an outage requests fail fast instead of
   * queueing. @defaultValue 5000
   */
  connectTimeoutMs?: number;
  /** Called with connection errors the pool reports between queries. */
  onError?: (err: Error) => void;
}

/**
 * Listens for a lost connection while `client` is checked out; returns what gives it back to the
 * pool. A connection lost while checked out (a session, a transaction between statements) emits
 * `error` on its client, which pg-pool listens to only while the client is idle: unheard, it
 * would end the process. The next statement on it fails, and the failure is handled there.
 */
function checkOut(client: pg.PoolClient, onLost: () => void = () => undefined): (destroy?: Error | boolean) => void {
  const lost = () => onLost();
  client.on('error', lost);
  return (destroy) => {
    client.removeListener('error', lost);
    client.release(destroy);
  };
}

const statementNames = new Map<string, string>();

/** A stable name per statement text, so each connection prepares it once. */
function statementName(text: string): string {
  let name = statementNames.get(text);
  if (!name) {
    name = `rastro_${createHash('sha1').update(text).digest('hex').slice(0, 20)}`;
    statementNames.set(text, name);
  }
  return name;
}

/** A `pg` client or pool as rastro runs statements on it: the query-config form of `query`. */
export interface PgQueryable {
  query(config: { text: string; values?: unknown[]; name?: string; types?: typeof types }): Promise<{ rows: unknown[]; rowCount: number | null }>;
}

/**
 * Runs a statement on any `pg` client or pool, rastro's or the application's, with rastro's type
 * parsers passed with the query: the results are the same whatever the pool's own parsers.
 */
export async function runOnPg<Row>(client: PgQueryable, text: string, values?: readonly unknown[], options?: QueryOptions): Promise<QueryResult<Row>> {
  try {
    const config = { text, values: values as unknown[] | undefined, types, ...(options?.prepare ? { name: statementName(text) } : {}) };
    const result = await client.query(config);
    return { rows: result.rows as Row[], rowCount: result.rowCount ?? 0 };
  } catch (err) {
    throw toDatabaseError(err);
  }
}

const run = runOnPg;

/**
 * Server settings for rastro's connections. JIT is off: rastro's statements are short, and with
 * statistics behind (right after a bulk load, say) the planner can put one over jit_above_cost;
 * compiling it then takes longer than running it a hundred times. Settings in PGOPTIONS come
 * after, so they win; an `options` parameter in the URL replaces these.
 */
function connectionOptions(): string {
  return ['-c jit=off', process.env.PGOPTIONS].filter(Boolean).join(' ');
}

/** A `pg` `Pool` as rastro takes it from an application: what rastro uses of it. */
export interface PgPool extends PgQueryable {
  connect(): Promise<unknown>;
  readonly totalCount: number;
}

/** A client for LISTEN, made as the application's pool makes its own, with rastro's parsers. */
function listenerClientOf(pool: PgPool): () => pg.Client {
  const { Client = pg.Client, options = {} } = pool as unknown as { Client?: typeof pg.Client; options?: pg.ClientConfig };
  return () => new Client({ ...options, types, keepAlive: true });
}

/** A {@link Database} on a PostgreSQL server through a `pg` pool: rastro's own, or the application's. */
export function openPostgres(options: PostgresOptions): Database {
  if (options.pool === undefined && options.url === undefined) throw new TypeError('openPostgres needs a url or a pool');
  const own = options.pool === undefined;
  const pool = (options.pool as unknown as pg.Pool | undefined) ?? new pg.Pool({
    connectionString: options.url,
    max: options.poolSize ?? 10,
    types,
    options: connectionOptions(),
    connectionTimeoutMillis: options.connectTimeoutMs ?? 5000,
    // Finds a connection whose peer vanished without a word (a network partition) between queries.
    keepAlive: true,
  });
  // An application's pool keeps its own error handling: rastro adds no listener to it.
  if (own) pool.on('error', (err) => options.onError?.(toDatabaseError(err)));
  const listenerClient = options.pool
    ? listenerClientOf(options.pool)
    : () => new pg.Client({ connectionString: options.url, types, connectionTimeoutMillis: 5000, keepAlive: true });
  const listener = new NotificationListener(listenerClient, options.onError);

  return {
    kind: 'postgres',
    query: (text, values, options) => run(pool, text, values, options),
    // Each statement on it is its own transaction.
    [IN_TRANSACTION]: () => false,
    async transaction(fn) {
      const client = await pool.connect().catch((err: unknown) => {
        throw toDatabaseError(err);
      });
      const release = checkOut(client);
      const committed: (() => void)[] = [];
      const tx: Transaction = {
        query: (text, values, options) => run(client, text, values, options),
        exec: async (script) => {
          await run(client, script);
        },
        afterCommit: (callback) => void committed.push(callback),
      };
      let broken: unknown;
      try {
        await run(client, 'begin');
        const result = await fn(tx);
        await run(client, 'commit');
        runAfterCommit(committed);
        return result;
      } catch (err) {
        await run(client, 'rollback').catch((rollbackErr: unknown) => {
          broken = rollbackErr;
        });
        throw err;
      } finally {
        // A connection whose rollback failed is in an unknown state: destroy it.
        release(broken instanceof Error ? broken : undefined);
      }
    },
    listen: (channel, fn) => listener.listen(channel, fn),
    async connect() {
      const client = await pool.connect().catch((err: unknown) => {
        throw toDatabaseError(err);
      });
      let lost = false;
      const release = checkOut(client, () => (lost = true));
      return {
        query: (text, values, options) => run(client, text, values, options),
        // Destroy rather than return it: session locks must not outlive the session.
        release: async () => release(true),
        get lost() {
          return lost;
        },
      };
    },
    async close() {
      await listener.close();
      if (own) await pool.end();
    },
  };
}

/**
 * One dedicated connection for LISTEN, shared by every channel of a database. It reconnects
 * after a failure; notifications sent while it was down are lost, which is why every reader
 * also polls.
 */
class NotificationListener {
  private client: pg.Client | undefined;
  private connecting: Promise<pg.Client> | undefined;
  private readonly handlers = new Map<string, Set<(payload: string) => void>>();
  private closed = false;
  private retryTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly newClient: () => pg.Client,
    private readonly onError?: (err: Error) => void,
  ) {}

  async listen(channel: string, fn: (payload: string) => void): Promise<() => Promise<void>> {
    assertChannelName(channel);
    let set = this.handlers.get(channel);
    const first = set === undefined;
    if (!set) this.handlers.set(channel, (set = new Set()));
    set.add(fn);
    const client = await this.connect();
    if (first) await client.query(`listen ${channel}`).catch((err: unknown) => this.fail(err));
    return async () => {
      set.delete(fn);
      if (set.size > 0 || this.handlers.get(channel) !== set) return;
      this.handlers.delete(channel);
      await this.client?.query(`unlisten ${channel}`).catch(() => undefined);
    };
  }

  private connect(): Promise<pg.Client> {
    if (this.client) return Promise.resolve(this.client);
    this.connecting ??= (async () => {
      const client = this.newClient();
      client.on('notification', (msg) => {
        for (const fn of this.handlers.get(msg.channel) ?? []) fn(msg.payload ?? '');
      });
      client.on('error', (err) => this.fail(err));
      client.on('end', () => this.fail(new Error('listener connection ended')));
      try {
        await client.connect();
        for (const channel of this.handlers.keys()) await client.query(`listen ${channel}`);
      } catch (err) {
        this.connecting = undefined;
        await client.end().catch(() => undefined);
        throw toDatabaseError(err);
      }
      this.client = client;
      this.connecting = undefined;
      return client;
    })();
    return this.connecting;
  }

  private fail(err: unknown): void {
    if (this.closed || !this.client) return;
    const dead = this.client;
    this.client = undefined;
    dead.removeAllListeners('end');
    dead.end().catch(() => undefined);
    this.onError?.(toDatabaseError(err));
    this.scheduleReconnect();
  }

  private scheduleReconnect(): void {
    if (this.closed || this.retryTimer || this.handlers.size === 0) return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      this.connect().catch(() => this.scheduleReconnect());
    }, 1000);
    this.retryTimer.unref();
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retryTimer);
    const client = this.client ?? (await this.connecting?.catch(() => undefined));
    this.client = undefined;
    client?.removeAllListeners('end');
    await client?.end().catch(() => undefined);
  }
}
