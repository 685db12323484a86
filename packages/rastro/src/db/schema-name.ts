import { ConfigError } from '../errors.js';

const SCHEMA = /^[a-z_][a-z0-9_]{0,39}$/;

/**
 * Validates a schema name once, at configuration time, and returns it quoted for SQL text.
 * Only lowercase identifiers of up to 40 characters are accepted, so the name can also form
 * NOTIFY channel names.
 */
export function quoteSchema(schema: string): string {
  if (!SCHEMA.test(schema) || schema.startsWith('pg_')) {
    throw new ConfigError(
      `schema ${JSON.stringify(schema)} is not usable: use a lowercase identifier of at most 40 characters (letters, digits, underscores), not starting with pg_`,
    );
  }
  return `"${schema}"`;
}
