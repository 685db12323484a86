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

/**
 * Runs `fn` with one short-lived client, outside any pool. An error the client reports outside a
 * query (its connection terminated, say) fails the call instead of the process.
 */
export async function withClient(fn, url = DATABASE_URL) {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 });
  let broken;
  client.on('error', (err) => (broken ??= err));
  await client.connect();
  let result;
  try {
    result = await fn(client);
  } finally {
    await client.end();
  }
  if (broken) throw new Error(`a connection to ${describeUrl(url)} failed: ${broken.message}`, { cause: broken });
  return result;
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Drops `database` once no client connection to it is left, and fails, naming `owner` and what
 * is still connected, if one stays for `timeoutMs`: `with (force)` would terminate it, and the
 * process holding it would get a FATAL error on a connection it thinks is open. Autovacuum
 * workers are no client's and are left to `with (force)`.
 */
export async function dropDatabase(database, owner, timeoutMs = 5000) {
  await withClient(async (client) => {
    const connected = () =>
      client
        .query(
          `select pid, coalesce(nullif(application_name, ''), '-') as application, state, left(query, 60) as query
             from pg_stat_activity where datname = $1 and backend_type = 'client backend' and pid <> pg_backend_pid()`,
          [database],
        )
        .then(({ rows }) => rows);
    const deadline = Date.now() + timeoutMs;
    for (let rows = await connected(); rows.length > 0; rows = await connected()) {
      if (Date.now() > deadline) {
        const list = rows.map((row) => `pid ${row.pid} (${row.application}, ${row.state}: ${row.query})`).join('; ');
        throw new Error(`${owner}: ${rows.length} connection(s) to database ${database} still open ${timeoutMs / 1000} s after closing: ${list}`);
      }
      await sleep(10);
    }
    await client.query(`drop database if exists ${database} with (force)`);
  });
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
