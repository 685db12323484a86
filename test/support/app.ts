import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { buildApp, type AppDeps } from '../../packages/server/src/http/app.js';
import { createServices, type Services } from '../../packages/server/src/server.js';
import { freshSchema, type Backend } from './databases.js';

export interface TestApp extends Services {
  app: FastifyInstance;
  schema: string;
  /** POST a JSON body. */
  post(url: string, body: unknown, headers?: Record<string, string>): Promise<LightMyRequestResponse>;
  get(url: string, headers?: Record<string, string>): Promise<LightMyRequestResponse>;
  /** Opens an account and returns its id. */
  openAccount(owner?: string): Promise<string>;
  eventCount(): Promise<number>;
  /** The number of rows of every table of the schema, by table name. */
  rowCounts(): Promise<Record<string, number>>;
}

/** The HTTP app on a fresh schema of the backend. */
export async function testApp(
  backend: Backend,
  options: { snapshotEvery?: number; idempotencyTtlSeconds?: number; accountCacheSize?: number } & Partial<Pick<AppDeps, 'apiKey' | 'logger' | 'allowedHosts' | 'timeouts'>> = {},
): Promise<TestApp> {
  const { db, schema } = await freshSchema(backend);
  const services = createServices(db, {
    schema,
    snapshotEvery: options.snapshotEvery ?? 100,
    idempotencyTtlSeconds: options.idempotencyTtlSeconds ?? 86_400,
    accountCacheSize: options.accountCacheSize,
  });
  const app = await buildApp({ ...services, apiKey: options.apiKey, logger: options.logger, allowedHosts: options.allowedHosts, timeouts: options.timeouts });
  const inject = (opts: InjectOptions) => app.inject(opts);
  const testApp: TestApp = {
    ...services,
    app,
    schema,
    post: (url, body, headers = {}) => inject({ method: 'POST', url, payload: JSON.stringify(body), headers: { 'content-type': 'application/json', ...headers } }),
    get: (url, headers = {}) => inject({ method: 'GET', url, headers }),
    async openAccount(owner = 'Ana') {
      const res = await testApp.post('/accounts', { owner });
      if (res.statusCode !== 201) throw new Error(`open account: ${res.statusCode} ${res.body}`);
      return res.json<{ id: string }>().id;
    },
    async eventCount() {
      const { rows } = await db.query<{ n: number }>(`select count(*)::int as n from "${schema}".events`);
      return rows[0]!.n;
    },
    async rowCounts() {
      const { rows: tables } = await db.query<{ name: string }>(
        `select table_name as name from information_schema.tables where table_schema = $1 and table_type = 'BASE TABLE' order by 1`,
        [schema],
      );
      const counts: Record<string, number> = {};
      for (const { name } of tables) {
        const { rows } = await db.query<{ n: number }>(`select count(*)::int as n from "${schema}"."${name}"`);
        counts[name] = rows[0]!.n;
      }
      return counts;
    },
  };
  return testApp;
}
