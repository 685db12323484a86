import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type AddressInfo, type Server, type Socket, connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** The machine's brokers, when the environment names them (CI does): the broker suites skip otherwise. */
export const NATS_URL = process.env.NATS_URL;
export const RABBITMQ_URL = process.env.RABBITMQ_URL;

const NATS_SERVER = ['/usr/sbin/nats-server', '/usr/bin/nats-server', '/usr/local/bin/nats-server'].find((path) => existsSync(path));
export const canStartNats = NATS_SERVER !== undefined;

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function waitForPort(port: number, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const open = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1', () => {
        socket.destroy();
        resolve(true);
      });
      socket.on('error', () => resolve(false));
    });
    if (open) return;
    if (Date.now() > deadline) throw new Error(`nothing listens on port ${port}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * A private NATS server with JetStream on a free port, its store in a temporary folder, for
 * outage tests: `kill()` stops it hard (SIGKILL), `start()` brings it back on the same port with
 * the same store. The machine's shared server is never touched.
 */
export async function startPrivateNats(): Promise<{ url: string; kill(): Promise<void>; start(): Promise<void>; close(): Promise<void> }> {
  if (!NATS_SERVER) throw new Error('nats-server is not installed');
  const port = await freePort();
  const dir = await mkdtemp(join(tmpdir(), 'rastro-nats-'));
  let child: ChildProcess | undefined;
  const start = async () => {
    child = spawn(NATS_SERVER, ['-a', '127.0.0.1', '-p', String(port), '-js', '-sd', dir], { stdio: 'ignore' });
    await waitForPort(port);
  };
  const kill = async () => {
    const exited = new Promise((resolve) => child?.once('exit', resolve));
    child?.kill('SIGKILL');
    await exited;
    child = undefined;
  };
  await start();
  return {
    url: `nats://127.0.0.1:${port}`,
    kill,
    start,
    async close() {
      if (child) await kill();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/**
 * A TCP proxy between a client and a server that a test can cut: `cut()` drops every open
 * connection and refuses new ones, `restore()` accepts again on the same port.
 */
export async function startTcpProxy(target: { host: string; port: number }): Promise<{ port: number; cut(): Promise<void>; restore(): Promise<void>; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  let server: Server | undefined;
  const port = await freePort();
  const listen = async () => {
    server = createServer((client) => {
      const upstream = connect(target.port, target.host);
      sockets.add(client).add(upstream);
      const drop = () => {
        client.destroy();
        upstream.destroy();
        sockets.delete(client);
        sockets.delete(upstream);
      };
      client.on('error', drop).on('close', drop);
      upstream.on('error', drop).on('close', drop);
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve) => server!.listen(port, '127.0.0.1', resolve));
  };
  const cut = async () => {
    const closing = new Promise((resolve) => server?.close(resolve));
    for (const socket of sockets) socket.destroy();
    sockets.clear();
    await closing;
    server = undefined;
  };
  await listen();
  return { port, cut, restore: listen, close: cut };
}
