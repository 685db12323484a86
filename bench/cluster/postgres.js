// A private PostgreSQL server for the cluster section, on a free loopback port in a temporary
// folder (default settings but the port): the machine's shared server carries other work whose
// open transactions hold back every reader's frontier, which would measure them, not the relay.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { appendFile, chmod, chown, mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';

const run = promisify(execFile);
const BIN = ['/usr/lib/postgresql/15/bin', '/usr/lib/postgresql/16/bin', '/usr/lib/postgresql/17/bin'].find((dir) => existsSync(join(dir, 'initdb')));
const RUNUSER = ['/usr/sbin/runuser', '/sbin/runuser'].find((path) => existsSync(path));
const root = userInfo().uid === 0;

/** Why a private server cannot be started here, or undefined. */
export function privatePostgresMissing() {
  if (!BIN) return 'no PostgreSQL binaries in /usr/lib/postgresql/*/bin (initdb, pg_ctl)';
  if (root && !RUNUSER) return 'running as root without runuser: PostgreSQL refuses to run as root';
  return undefined;
}

const pgBin = (name, args) => (root ? run(RUNUSER, ['-u', 'postgres', '--', join(BIN, name), ...args]) : run(join(BIN, name), args));

/** Waits until the server takes a connection: on a loaded machine that can lag behind pg_ctl's own wait. */
async function accepting(url) {
  for (let i = 0; ; i++) {
    const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 });
    try {
      await client.connect();
      await client.query('select 1');
      return;
    } catch (err) {
      if (i >= 20) throw new Error(`the private PostgreSQL server took no connection: ${err.message}`);
      await new Promise((resolve) => setTimeout(resolve, 500));
    } finally {
      await client.end().catch(() => undefined);
    }
  }
}

export async function startPostgres() {
  const missing = privatePostgresMissing();
  if (missing) throw new Error(missing);
  const base = await mkdtemp(join(tmpdir(), 'rastro-bench-pg-'));
  await chmod(base, 0o755);
  const dir = join(base, 'data');
  const server = createServer();
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  const close = async () => {
    await pgBin('pg_ctl', ['-D', dir, 'stop', '-m', 'immediate', '-w']).catch(() => undefined);
    await rm(base, { recursive: true, force: true });
  };
  try {
    if (root) await chown(base, Number((await run('id', ['-u', 'postgres'])).stdout), Number((await run('id', ['-g', 'postgres'])).stdout));
    await pgBin('initdb', ['-D', dir, '-U', 'postgres', '--auth=trust', '-E', 'UTF8']);
    await appendFile(join(dir, 'postgresql.conf'), `port = ${port}\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '${dir}'\n`);
    await pgBin('pg_ctl', ['-D', dir, '-l', join(base, 'server.log'), '-w', 'start']);
    await accepting(`postgres://postgres@127.0.0.1:${port}/postgres`);
  } catch (err) {
    await close();
    throw err;
  }
  return { url: `postgres://postgres@127.0.0.1:${port}/postgres`, close };
}
