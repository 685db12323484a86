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
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

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
  });
}
