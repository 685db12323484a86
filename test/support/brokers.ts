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

export async function waitForPort(port: number, timeoutMs = 10_000): Promise<void> {
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

/** A TCP proxy a test controls, in front of a server. */
export interface TcpProxy {
  port: number;
  /** Drops every open connection and refuses new ones. */
  cut(): Promise<void>;
  /** Accepts again on the same port. */
  restore(): Promise<void>;
  /**
   * Accepts again, forwarding new connections to `target`: what a virtual address or HAProxy in
   * front of Patroni does after a failover.
   */
  switchTo(target: { host: string; port: number }): Promise<void>;
  close(): Promise<void>;
}

/** A TCP proxy between a client and a server that a test can cut, restore, or point elsewhere. */
export async function startTcpProxy(initial: { host: string; port: number }): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  let target = initial;
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
    if (!server) return;
    const closing = new Promise((resolve) => server!.close(resolve));
    for (const socket of sockets) socket.destroy();
    sockets.clear();
    await closing;
    server = undefined;
  };
  await listen();
  return {
    port, cut, restore: listen, close: cut,
    async switchTo(next) {
      await cut();
      target = next;
      await listen();
    },
  };
}

/** A node of a private cluster: its client URL, and whether it runs now. */
export interface ClusterNode {
  name: string;
  url: string;
  readonly running: boolean;
  kill(): Promise<void>;
  start(): Promise<void>;
}

/**
 * A private three-node NATS cluster with JetStream, on free loopback ports, each node with a
 * store of its own, for failover tests: a node killed (SIGKILL) and started again rejoins with
 * its store. `url` names all three servers, as a client configured for a cluster does.
 */
export async function startNatsCluster(size = 3): Promise<{ url: string; nodes: ClusterNode[]; close(): Promise<void> }> {
  if (!NATS_SERVER) throw new Error('nats-server is not installed');
  const base = await mkdtemp(join(tmpdir(), 'rastro-nats-cluster-'));
  const ports = await Promise.all(Array.from({ length: size }, async () => ({ client: await freePort(), cluster: await freePort() })));
  const routes = ports.map((p) => `nats://127.0.0.1:${p.cluster}`).join(',');
  const nodes = ports.map((p, i): ClusterNode => {
    const name = `n${i + 1}`;
    let child: ChildProcess | undefined;
    return {
      name,
      url: `nats://127.0.0.1:${p.client}`,
      get running() {
        return child !== undefined;
      },
      async start() {
        child = spawn(NATS_SERVER, [
          '-a', '127.0.0.1', '-p', String(p.client), '-js', '-sd', join(base, name), '--server_name', name,
          '--cluster_name', 'rastro-test', '--cluster', `nats://127.0.0.1:${p.cluster}`, '--routes', routes,
        ], { stdio: 'ignore' });
        await waitForPort(p.client);
      },
      async kill() {
        const exited = new Promise((resolve) => child?.once('exit', resolve));
        child?.kill('SIGKILL');
        await exited;
        child = undefined;
      },
    };
  });
  await Promise.all(nodes.map((node) => node.start()));
  return {
    url: nodes.map((node) => node.url).join(','),
    nodes,
    async close() {
      await Promise.all(nodes.filter((node) => node.running).map((node) => node.kill()));
      await rm(base, { recursive: true, force: true });
    },
  };
}
