// Private NATS servers for the cluster section: one server, or a three-node cluster, with
// JetStream, on free loopback ports and temporary store folders, stopped and removed after.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const NATS_SERVER = ['/usr/sbin/nats-server', '/usr/bin/nats-server', '/usr/local/bin/nats-server'].find((path) => existsSync(path));

async function freePort() {
  const server = createServer();
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function listening(port) {
  for (let i = 0; i < 400; i++) {
    const open = await new Promise((resolve) => {
      const socket = connect(port, '127.0.0.1', () => resolve(socket.destroy() || true));
      socket.on('error', () => resolve(false));
    });
    if (open) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`nats-server did not listen on port ${port}`);
}

/** `size` 1: one server; more: a cluster of that many nodes. Resolves with every node's URL, comma-separated. */
export async function startNats(size) {
  if (!NATS_SERVER) throw new Error('nats-server is not installed');
  const base = await mkdtemp(join(tmpdir(), 'rastro-bench-nats-'));
  const ports = [];
  for (let i = 0; i < size; i++) ports.push({ client: await freePort(), cluster: await freePort() });
  const routes = ports.map((p) => `nats://127.0.0.1:${p.cluster}`).join(',');
  const children = ports.map((p, i) => spawn(NATS_SERVER, [
    '-a', '127.0.0.1', '-p', String(p.client), '-js', '-sd', join(base, `n${i + 1}`), '--server_name', `n${i + 1}`,
    ...(size > 1 ? ['--cluster_name', 'rastro-bench', '--cluster', `nats://127.0.0.1:${p.cluster}`, '--routes', routes] : []),
  ], { stdio: 'ignore' }));
  const close = async () => {
    await Promise.all(children.map((child) => (child.exitCode === null && child.signalCode === null ? new Promise((resolve) => {
      child.once('exit', resolve);
      child.kill('SIGKILL');
    }) : undefined)));
    await rm(base, { recursive: true, force: true });
  };
  try {
    await Promise.all(ports.map((p) => listening(p.client)));
  } catch (err) {
    await close();
    throw err;
  }
  return { url: ports.map((p) => `nats://127.0.0.1:${p.client}`).join(','), close };
}
