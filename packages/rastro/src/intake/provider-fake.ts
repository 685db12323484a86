import { createServer, type Server } from 'node:http';
import type { OrderStatus } from './order-snapshot.js';

/** An order as the fake provider holds it: its current snapshot. */
export interface ProviderOrder {
  orderId: string;
  status: OrderStatus;
  /** The provider's instant of the snapshot; null to send none. */
  lastUpdate: Date | null;
  /** Anything else the provider sends (invoice, customer, …). */
  [field: string]: unknown;
}

/** Where the fake sends webhooks: a rastro server's intake route. */
export interface WebhookTarget {
  /** e.g. `http://127.0.0.1:3000` */
  baseUrl: string;
  source: string;
  apiKey?: string;
}

export interface ProviderFake {
  /** The REST API's base URL, for `pollProvider` / `RASTRO_PROVIDER_URL`. */
  readonly url: string;
  /** Sets an order's current snapshot, as the REST pages show it from now on. */
  setOrder(order: ProviderOrder): void;
  /** Sends a webhook for the order's current snapshot, optionally overridden; resolves to the HTTP status. */
  sendWebhook(target: WebhookTarget, orderId: string, overrides?: Partial<ProviderOrder>): Promise<number>;
  /** REST page requests served so far. */
  readonly pagesServed: number;
  /** The next `count` page requests answer 503. */
  failPages(count: number): void;
  close(): Promise<void>;
}

/**
 * The webhook's precision: milliseconds, UTC.
 *
 * @example
 * ```ts
 * webhookTime(new Date('2026-09-08T11:54:24.512Z')) // '2026-09-08T11:54:24.512Z'
 * ```
 */
export const webhookTime = (at: Date) => at.toISOString();

/**
 * The REST API's precision: the whole second at -03:00.
 *
 * @example
 * ```ts
 * restTime(new Date('2026-09-08T11:54:24.512Z')) // '2026-09-08T08:54:24-03:00'
 * ```
 */
export function restTime(at: Date): string {
  return `${new Date(at.getTime() - 3 * 3600_000).toISOString().slice(0, 19)}-03:00`;
}

function wire(order: ProviderOrder, time: (at: Date) => string): Record<string, unknown> {
  const { lastUpdate, ...rest } = order;
  return { ...rest, ...(lastUpdate ? { lastUpdate: time(lastUpdate) } : {}) };
}

/**
 * A payment provider as a real HTTP server, for tests and `rastro demo orders`: REST pages at
 * `GET /orders?page=N&pageSize=K` (`{ orders, nextPage }`, whole-second times at -03:00), and
 * webhooks sent to a rastro server (millisecond times in UTC), as the seed's provider does.
 *
 * @example
 * ```ts
 * const provider = await startProviderFake()
 * provider.setOrder({ orderId: '260074525', status: 'received', lastUpdate: new Date('2026-09-08T11:54:24.512Z') })
 * await provider.sendWebhook({ baseUrl: server.url, source: 'pied' }, '260074525')
 * await pollProvider(intake, { source: 'pied', baseUrl: provider.url })
 * ```
 */
export async function startProviderFake(): Promise<ProviderFake> {
  const orders = new Map<string, ProviderOrder>();
  let pagesServed = 0;
  let failing = 0;
  const server: Server = createServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://fake');
    if (request.method !== 'GET' || url.pathname !== '/orders') return void response.writeHead(404).end();
    if (failing > 0) {
      failing--;
      return void response.writeHead(503, { 'content-type': 'application/json' }).end('{"error":"unavailable"}');
    }
    pagesServed++;
    const page = Math.max(1, Number(url.searchParams.get('page') ?? 1) || 1);
    const size = Math.min(500, Math.max(1, Number(url.searchParams.get('pageSize') ?? 100) || 100));
    const all = [...orders.values()].sort((a, b) => (a.orderId < b.orderId ? -1 : a.orderId > b.orderId ? 1 : 0));
    const slice = all.slice((page - 1) * size, page * size).map((order) => wire(order, restTime));
    const nextPage = page * size < all.length ? page + 1 : null;
    response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ orders: slice, nextPage }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  return {
    url,
    setOrder: (order) => void orders.set(order.orderId, { ...order }),
    async sendWebhook(target, orderId, overrides = {}) {
      const order = orders.get(orderId);
      if (!order) throw new Error(`the fake provider has no order ${orderId}`);
      const response = await fetch(`${target.baseUrl}/intake/${target.source}/orders`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(target.apiKey ? { authorization: `Bearer ${target.apiKey}` } : {}) },
        body: JSON.stringify(wire({ ...order, ...overrides } as ProviderOrder, webhookTime)),
      });
      await response.arrayBuffer();
      return response.status;
    },
    get pagesServed() {
      return pagesServed;
    },
    failPages: (count) => void (failing = count),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
