import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort, waitForPort, type ClusterNode } from './brokers.js';

// The package's own scripts: /usr/sbin/rabbitmq-server switches to the rabbitmq user and reads
// /etc/rabbitmq, the machine's shared node's settings.
const SBIN = ['/usr/lib/rabbitmq/bin', '/usr/local/sbin', '/usr/sbin'].find((dir) => existsSync(join(dir, 'rabbitmq-server')) && existsSync(join(dir, 'rabbitmqctl')));
const EPMD = ['/usr/bin/epmd', '/usr/local/bin/epmd'].find((path) => existsSync(path));
export const canStartRabbitMQ = SBIN !== undefined && EPMD !== undefined;

const run = promisify(execFile);

export interface RabbitCluster {
  /** Every node's AMQP URL, separated by commas, as rastro takes a cluster. */
  url: string;
  nodes: (ClusterNode & { nodename: string })[];
  /** `rabbitmqctl -n <node> …` against a node of this cluster. */
  ctl(node: string, args: string[]): Promise<string>;
  close(): Promise<void>;
}

/**
 * A private RabbitMQ cluster on free loopback ports: its own epmd on a port of its own (so the
 * node names never meet the machine's shared node), a shared Erlang cookie in a temporary HOME,
 * each node with its own name, ports, data and log folders and no plugins. Nodes 2… join node 1.
 * `kill()` is SIGKILL; `start()` boots the node again on its data, and it rejoins the cluster.
 */
export async function startRabbitCluster(size = 3): Promise<RabbitCluster> {
  if (!SBIN || !EPMD) throw new Error('rabbitmq-server is not installed');
  const base = await mkdtemp(join(tmpdir(), 'rastro-rabbit-cluster-'));
  const epmdPort = await freePort();
  await writeFile(join(base, '.erlang.cookie'), randomBytes(16).toString('hex'), { mode: 0o400 });
  await writeFile(join(base, 'env.conf'), '');
  await writeFile(join(base, 'enabled_plugins'), '[].');
  const common = {
    HOME: base, ERL_EPMD_PORT: String(epmdPort), ERL_EPMD_ADDRESS: '127.0.0.1',
    RABBITMQ_CONF_ENV_FILE: join(base, 'env.conf'), RABBITMQ_ENABLED_PLUGINS_FILE: join(base, 'enabled_plugins'),
    RABBITMQ_ADVANCED_CONFIG_FILE: join(base, 'advanced.config'), RABBITMQ_NODE_IP_ADDRESS: '127.0.0.1',
    RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS: '-kernel inet_dist_use_interface {127,0,0,1}',
    // Makes the script exec the Erlang VM instead of waiting on it: the child is the VM, and
    // SIGKILL reaches it (not a shell that would leave the node running).
    RUNNING_UNDER_SYSTEMD: 'true',
    // rabbitmqctl calls made while a node is down leave crash dumps in the working folder otherwise.
    ERL_CRASH_DUMP: join(base, 'erl_crash.dump'),
  };
  const children: ChildProcess[] = [];
  const epmd = spawn(EPMD, ['-port', String(epmdPort), '-address', '127.0.0.1'], { stdio: 'ignore' });
  children.push(epmd);
  const ctl = async (node: string, args: string[]) => (await run(join(SBIN, 'rabbitmqctl'), ['-n', node, ...args], { env: { ...process.env, ...common }, timeout: 120_000 })).stdout;
  const tag = randomBytes(3).toString('hex');

  const nodes = await Promise.all(Array.from({ length: size }, async (_, i) => {
    const name = `r${i + 1}`;
    const nodename = `rastro-${tag}-${i + 1}@localhost`;
    const port = await freePort();
    const dist = await freePort();
    const dir = join(base, name);
    await mkdir(join(dir, 'mnesia'), { recursive: true });
    await mkdir(join(dir, 'log'), { recursive: true });
    await writeFile(join(dir, 'rabbitmq.conf'), 'log.console = false\n');
    const env = {
      ...process.env, ...common, RABBITMQ_NODENAME: nodename, RABBITMQ_NODE_PORT: String(port), RABBITMQ_DIST_PORT: String(dist),
      RABBITMQ_CONFIG_FILE: join(dir, 'rabbitmq.conf'), RABBITMQ_MNESIA_BASE: join(dir, 'mnesia'), RABBITMQ_LOG_BASE: join(dir, 'log'),
    };
    let child: ChildProcess | undefined;
    const node = {
      name, nodename,
      url: `amqp://guest:guest@127.0.0.1:${port}`,
      get running() {
        return child !== undefined;
      },
      async start() {
        child = spawn(join(SBIN!, 'rabbitmq-server'), [], { env, stdio: 'ignore' });
        children.push(child);
        const exited = new Promise((_resolve, reject) => child!.once('exit', (code) => reject(new Error(`RabbitMQ node ${nodename} exited (${code}) while starting; see ${join(dir, 'log')}`))));
        await Promise.race([waitForPort(port, 120_000), exited]);
      },
      async kill() {
        const exited = new Promise((resolve) => child?.once('exit', resolve));
        child?.kill('SIGKILL');
        await exited;
        child = undefined;
      },
    };
    return node;
  }));
  const close = async () => {
    for (const child of children.reverse()) {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGKILL');
        await exited;
      }
    }
    await rm(base, { recursive: true, force: true });
  };
  try {
    await waitForPort(epmdPort);
    await Promise.all(nodes.map((node) => node.start()));
    for (const node of nodes.slice(1)) {
      await ctl(node.nodename, ['stop_app']);
      await ctl(node.nodename, ['join_cluster', nodes[0]!.nodename]);
      await ctl(node.nodename, ['start_app']);
    }
  } catch (err) {
    await close();
    throw err;
  }
  return { url: nodes.map((node) => node.url).join(','), nodes, ctl, close };
}
