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
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

function parseCount(name: string, value: string | number, min: number): number {
  const n = typeof value === 'number' ? value : /^\d+$/.test(value) ? Number(value) : NaN;
  if (!Number.isSafeInteger(n) || n < min) throw new ConfigError(`${name} must be an integer of at least ${min}, got ${JSON.stringify(value)}`);
  return n;
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
  });
}
