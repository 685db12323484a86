import pg from 'pg';

export const DATABASE_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/** The URL without its password, for messages. */
export function describeUrl(url = DATABASE_URL) {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return '(an unparseable DATABASE_URL)';
  }
}

/** The same server and credentials, another database. */
export function databaseUrl(database, url = DATABASE_URL) {
  const parsed = new URL(url);
  parsed.pathname = `/${database}`;
  return parsed.toString();
}

/** Runs `fn` with one short-lived client, outside any pool. */
export async function withClient(fn, url = DATABASE_URL) {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/** Fails with a clear message when no PostgreSQL answers at DATABASE_URL. */
export async function assertReachable(url = DATABASE_URL) {
  try {
    return await withClient(async (client) => {
      const { rows } = await client.query('show server_version');
      return rows[0].server_version;
    }, url);
  } catch (err) {
    throw new Error(
      `cannot reach PostgreSQL at ${describeUrl(url)} (${err.message}). ` +
        'Start PostgreSQL or set DATABASE_URL, e.g. DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npm run bench',
    );
  }
}
