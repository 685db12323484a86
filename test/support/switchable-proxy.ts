import { createServer, connect, type Server, type Socket } from 'node:net';
import { freePort } from './brokers.js';

export interface SwitchableProxy {
  port: number;
  /** Drops every open connection and refuses new ones. */
  cut(): Promise<void>;
  /** Accepts again, forwarding new connections to `target`: what a virtual address or HAProxy does after a failover. */
  switchTo(target: { host: string; port: number }): Promise<void>;
  close(): Promise<void>;
}

/**
 * A TCP proxy in front of a database whose target can change: the address a deployment reaches
 * its primary through (a virtual IP, HAProxy behind Patroni, a managed service's endpoint).
 */
export async function startSwitchableProxy(initial: { host: string; port: number }): Promise<SwitchableProxy> {
  const port = await freePort();
  const sockets = new Set<Socket>();
  let target = initial;
  let server: Server | undefined;
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
    port, cut,
    async switchTo(next) {
      await cut();
      target = next;
      await listen();
    },
    close: cut,
  };
}
