import { execFile } from 'node:child_process';
import { chmod, chown, mkdtemp, rm, appendFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { userInfo } from 'node:os';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { freePort } from './brokers.js';

const BIN = ['/usr/lib/postgresql/15/bin', '/usr/lib/postgresql/16/bin', '/usr/lib/postgresql/17/bin'].find((dir) => existsSync(join(dir, 'initdb')));
const RUNUSER = ['/usr/sbin/runuser', '/sbin/runuser'].find((path) => existsSync(path));
const root = userInfo().uid === 0;
/** The binaries are here, and a user they accept can run them (PostgreSQL refuses root). */
export const canStartPostgres = BIN !== undefined && (!root || RUNUSER !== undefined);

const run = promisify(execFile);

/** Runs a PostgreSQL binary, as the postgres user when this process is root. */
async function pgBin(name: string, args: string[]): Promise<string> {
  const command = join(BIN!, name);
  const { stdout } = root ? await run(RUNUSER!, ['-u', 'postgres', '--', command, ...args], { timeout: 120_000 }) : await run(command, args, { timeout: 120_000 });
  return stdout;
}

export interface PostgresNode {
  port: number;
  /** `postgres://postgres@127.0.0.1:<port>/postgres`. */
  url: string;
  dir: string;
  query<Row = Record<string, unknown>>(text: string): Promise<Row[]>;
}

/** A private primary and its streaming standby, for failover tests. */
export interface PostgresPair {
  primary: PostgresNode;
  standby: PostgresNode;
  /** Stops the standby's WAL receiver: what the primary commits from now on never reaches it. */
  holdBackStandby(): Promise<void>;
  /** Kills the primary at once (`pg_ctl stop -m immediate`: no shutdown checkpoint, as a crash). */
  killPrimary(): Promise<void>;
  /** Promotes the standby and waits until it takes writes. */
  promote(): Promise<void>;
  close(): Promise<void>;
}

function node(port: number, dir: string): PostgresNode {
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  return {
    port, url, dir,
    async query(text) {
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      try {
        return (await client.query(text)).rows;
      } finally {
        await client.end();
      }
    },
  };
}

/**
 * A private PostgreSQL primary and a streaming standby made with `pg_basebackup`, on free
 * loopback ports, in temporary folders, with trust authentication. `synchronous` names the
 * standby in `synchronous_standby_names`, so a commit returns only once the standby has it;
 * otherwise replication is asynchronous. The promoted standby asks for no standby of its own.
 * The machine's own server is never touched.
 */
export async function startPostgresPair(options: { synchronous: boolean }): Promise<PostgresPair> {
  if (!canStartPostgres) throw new Error('PostgreSQL binaries are not installed');
  const base = await mkdtemp(join(tmpdir(), 'rastro-pg-pair-'));
  await chmod(base, 0o755);
  const [primaryPort, standbyPort] = [await freePort(), await freePort()];
  const primary = node(primaryPort, join(base, 'primary'));
  const standby = node(standbyPort, join(base, 'standby'));
  const started: PostgresNode[] = [];
  const stop = async (n: PostgresNode) => {
    await pgBin('pg_ctl', ['-D', n.dir, 'stop', '-m', 'immediate', '-w']).catch(() => undefined);
  };
  const close = async () => {
    for (const n of started.splice(0)) await stop(n);
    await rm(base, { recursive: true, force: true });
  };
  try {
    if (root) await chown(base, Number((await run('id', ['-u', 'postgres'])).stdout), Number((await run('id', ['-g', 'postgres'])).stdout));
    await pgBin('initdb', ['-D', primary.dir, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync']);
    await appendFile(join(primary.dir, 'postgresql.conf'), [
      `port = ${primaryPort}`, "listen_addresses = '127.0.0.1'", `unix_socket_directories = '${primary.dir}'`,
      'wal_level = replica', 'max_wal_senders = 5', 'hot_standby = on', 'max_connections = 200', 'shared_buffers = 32MB',
      'fsync = off', 'full_page_writes = off', 'wal_keep_size = 256MB',
      `synchronous_standby_names = '${options.synchronous ? 'standby1' : ''}'`, '',
    ].join('\n'));
    await pgBin('pg_ctl', ['-D', primary.dir, '-l', join(base, 'primary.log'), '-w', 'start']);
    started.push(primary);
    await pgBin('pg_basebackup', ['-h', '127.0.0.1', '-p', String(primaryPort), '-U', 'postgres', '-D', standby.dir, '-X', 'stream', '-R', '--no-sync']);
    await appendFile(join(standby.dir, 'postgresql.auto.conf'), [
      `port = ${standbyPort}`, `unix_socket_directories = '${standby.dir}'`, "synchronous_standby_names = ''",
      `primary_conninfo = 'host=127.0.0.1 port=${primaryPort} user=postgres application_name=standby1'`, '',
    ].join('\n'));
    await pgBin('pg_ctl', ['-D', standby.dir, '-l', join(base, 'standby.log'), '-w', 'start']);
    started.push(standby);
    // Streaming (and, when synchronous, counted as the synchronous standby) before the test writes.
    for (let i = 0; ; i++) {
      const rows = await primary.query<{ sync_state: string }>("select sync_state from pg_stat_replication where application_name = 'standby1' and state = 'streaming'");
      if (rows.length === 1 && rows[0]!.sync_state === (options.synchronous ? 'sync' : 'async')) break;
      if (i > 200) throw new Error('the standby did not start streaming');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  } catch (err) {
    await close();
    throw err;
  }
  return {
    primary, standby, close,
    async holdBackStandby() {
      await standby.query("alter system set primary_conninfo = ''");
      await standby.query('select pg_reload_conf()');
      for (let i = 0; (await standby.query('select 1 from pg_stat_wal_receiver')).length > 0; i++) {
        if (i > 200) throw new Error('the standby kept receiving WAL');
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    },
    async killPrimary() {
      await stop(primary);
      started.splice(started.indexOf(primary), 1);
    },
    async promote() {
      await standby.query('select pg_promote(true, 60)');
    },
  };
}
