import { ConfigError } from './errors.js';
import { quoteSchema } from './db/schema-name.js';

/** Options for the rastro server and CLI. Each is resolved from options, then environment, then default. */
export interface RastroOptions {
  /**
   * A `postgres://` URL. Without one, rastro runs on embedded PGlite under `dataDir`.
   * @defaultValue `DATABASE_URL`
   */
  databaseUrl?: string;
  /** @defaultValue `RASTRO_DATA_DIR`, else `./.rastro` */
  dataDir?: string;
  /** @defaultValue `RASTRO_SCHEMA`, else `rastro` */
  schema?: string;
  /** @defaultValue `PORT`, else 3000 */
  port?: number;
  /** @defaultValue `HOST`, else 127.0.0.1 */
  host?: string;
  /** @defaultValue `RASTRO_LOG_LEVEL`, else `info` */
  logLevel?: string;
  /** Required for a non-loopback `host`. @defaultValue `RASTRO_API_KEY` */
  apiKey?: string;
  /** Account snapshot interval in events; 0 turns snapshots off. @defaultValue `RASTRO_SNAPSHOT_EVERY`, else 100 */
  snapshotEvery?: number;
  /** How long idempotency keys are kept, in seconds. @defaultValue `RASTRO_IDEMPOTENCY_TTL_SECONDS`, else 86400 */
  idempotencyTtlSeconds?: number;
  /** Where "cancelled after import" alerts are posted. @defaultValue `RASTRO_ORDER_ALERT_URL`, else none (alerts wait, parked) */
  orderAlertUrl?: string;
  /** The payment provider's REST API that `rastro poll` and serve's poll loop page through. @defaultValue `RASTRO_PROVIDER_URL` */
  providerUrl?: string;
  /** The provider's name, the `source` of polled snapshots. @defaultValue `RASTRO_PROVIDER_SOURCE`, else `pied` */
  providerSource?: string;
  /** Seconds between polls in `rastro serve`; 0 = no poll loop. @defaultValue `RASTRO_POLL_INTERVAL_SECONDS`, else 0 */
  pollIntervalSeconds?: number;
}

export interface RastroConfig {
  /** A `postgres://` URL, or the PGlite data folder. */
  readonly databaseUrl: string;
  readonly embedded: boolean;
  readonly dataDir: string;
  readonly schema: string;
  readonly port: number;
  readonly host: string;
  readonly logLevel: string;
  readonly apiKey: string | undefined;
  readonly snapshotEvery: number;
  readonly idempotencyTtlSeconds: number;
  readonly orderAlertUrl: string | undefined;
  readonly providerUrl: string | undefined;
  readonly providerSource: string;
  readonly pollIntervalSeconds: number;
}

function parseHttpUrl(name: string, value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  if (!/^https?:\/\/[^\s]+$/.test(value)) throw new ConfigError(`${name} must be an http:// or https:// URL`);
  return value.replace(/\/$/, '');
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

function parseCount(name: string, value: string | number, min: number): number {
  const n = typeof value === 'number' ? value : /^\d+$/.test(value) ? Number(value) : NaN;
  if (!Number.isSafeInteger(n) || n < min) throw new ConfigError(`${name} must be an integer of at least ${min}, got ${JSON.stringify(value)}`);
  return n;
}

function parseSource(value: string): string {
  if (!/^[a-z0-9][a-z0-9_-]{0,39}$/.test(value)) throw new ConfigError(`RASTRO_PROVIDER_SOURCE must be 1 to 40 lowercase letters, digits, dashes or underscores, got ${JSON.stringify(value)}`);
  return value;
}

function parsePort(value: string | number): number {
  const port = typeof value === 'number' ? value : /^\d+$/.test(value) ? Number(value) : NaN;
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new ConfigError(`PORT must be an integer from 0 to 65535, got ${JSON.stringify(value)}`);
  return port;
}

/**
 * Resolves and validates the configuration once; the result is frozen.
 *
 * @example
 * ```ts
 * const config = resolveConfig({ port: 0 }, process.env)
 * ```
 */
export function resolveConfig(options: RastroOptions = {}, env: NodeJS.ProcessEnv = process.env): RastroConfig {
  const url = options.databaseUrl ?? (env.DATABASE_URL || undefined);
  if (url !== undefined && !/^postgres(ql)?:\/\//.test(url)) throw new ConfigError('DATABASE_URL must be a postgres:// URL');
  const dataDir = options.dataDir ?? (env.RASTRO_DATA_DIR || './.rastro');
  const schema = options.schema ?? (env.RASTRO_SCHEMA || 'rastro');
  quoteSchema(schema);
  const logLevel = options.logLevel ?? (env.RASTRO_LOG_LEVEL || 'info');
  if (!LOG_LEVELS.includes(logLevel)) throw new ConfigError(`RASTRO_LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}`);
  return Object.freeze({
    databaseUrl: url ?? (dataDir === 'memory://' ? dataDir : `${dataDir.replace(/\/$/, '')}/pg`),
    embedded: url === undefined,
    dataDir,
    schema,
    port: parsePort(options.port ?? (env.PORT || 3000)),
    host: options.host ?? (env.HOST || '127.0.0.1'),
    logLevel,
    apiKey: options.apiKey ?? (env.RASTRO_API_KEY || undefined),
    snapshotEvery: parseCount('RASTRO_SNAPSHOT_EVERY', options.snapshotEvery ?? (env.RASTRO_SNAPSHOT_EVERY || 100), 0),
    idempotencyTtlSeconds: parseCount('RASTRO_IDEMPOTENCY_TTL_SECONDS', options.idempotencyTtlSeconds ?? (env.RASTRO_IDEMPOTENCY_TTL_SECONDS || 86_400), 1),
    orderAlertUrl: parseHttpUrl('RASTRO_ORDER_ALERT_URL', options.orderAlertUrl ?? (env.RASTRO_ORDER_ALERT_URL || undefined)),
    providerUrl: parseHttpUrl('RASTRO_PROVIDER_URL', options.providerUrl ?? (env.RASTRO_PROVIDER_URL || undefined)),
    providerSource: parseSource(options.providerSource ?? (env.RASTRO_PROVIDER_SOURCE || 'pied')),
    pollIntervalSeconds: parseCount('RASTRO_POLL_INTERVAL_SECONDS', options.pollIntervalSeconds ?? (env.RASTRO_POLL_INTERVAL_SECONDS || 0), 0),
  });
}
