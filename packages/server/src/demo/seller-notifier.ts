import { createServer, type IncomingMessage, type Server } from 'node:http';

/** How the fake provider behaves. */
export interface SellerNotifierBehaviour {
  /** Ignore a repeated idempotency key, as a provider that deduplicates does. */
  deduplicates: boolean;
  /** Fail this request before sending (nothing sent) or after sending (sent, but the caller sees an error). */
  failNext?: { when: 'before-send' | 'after-send'; count: number };
  /** Delay each response, in milliseconds. */
  delayMs?: number;
  /**
   * Once this many notifications were sent, hold every further request open without sending it
   * or answering (a provider that hangs); `undefined` again answers the requests that come next.
   */
  holdAfter?: number;
}

export interface SentNotification {
  orderId: string;
  commissionCents: number;
  idempotencyKey: string | undefined;
}

/**
 * A seller-notification provider as a real HTTP server: POST /notifications with a JSON body and
 * an Idempotency-Key header. It records what it "sent", can deduplicate by key or not, and can
 * fail before or after sending.
 */
export async function startSellerNotifier(behaviour: SellerNotifierBehaviour) {
  const sent: SentNotification[] = [];
  /** Keys of the requests held open by `holdAfter`, never sent. */
  const held: (string | undefined)[] = [];
  const seenKeys = new Set<string>();
  const state = { ...behaviour };

  const read = (request: IncomingMessage) =>
    new Promise<string>((resolve, reject) => {
      let body = '';
      request.setEncoding('utf8');
      request.on('data', (chunk: string) => (body += chunk));
      request.on('end', () => resolve(body));
      request.on('error', reject);
    });

  const server: Server = createServer(async (request, response) => {
    // The provider can be asked what happened to a key: GET /notifications/<key>.
    const lookup = request.method === 'GET' ? /^\/notifications\/([^/?]+)$/.exec(request.url ?? '') : null;
    if (lookup) {
      const key = decodeURIComponent(lookup[1]!);
      const found = sent.some((notification) => notification.idempotencyKey === key);
      response.writeHead(found ? 200 : 404, { 'content-type': 'application/json' }).end(JSON.stringify({ sent: found }));
      return;
    }
    if (request.method !== 'POST' || request.url !== '/notifications') {
      response.writeHead(404).end();
      return;
    }
    const body = JSON.parse(await read(request)) as { orderId: string; commissionCents: number };
    const key = request.headers['idempotency-key'] as string | undefined;
    if (state.holdAfter !== undefined && sent.length >= state.holdAfter) {
      held.push(key);
      return;
    }
    if (state.delayMs) await new Promise((resolve) => setTimeout(resolve, state.delayMs));
    const failure = state.failNext && state.failNext.count > 0 ? state.failNext : undefined;
    if (failure) failure.count--;
    if (failure?.when === 'before-send') {
      response.writeHead(503, { 'content-type': 'application/json' }).end('{"error":"unavailable"}');
      return;
    }
    const duplicate = key !== undefined && seenKeys.has(key);
    if (!(state.deduplicates && duplicate)) sent.push({ orderId: body.orderId, commissionCents: body.commissionCents, idempotencyKey: key });
    if (key) seenKeys.add(key);
    if (failure?.when === 'after-send') {
      // The message went out; the caller only sees a broken connection.
      request.socket.destroy();
      return;
    }
    response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ id: `msg-${sent.length}`, duplicate }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  return {
    url,
    sent,
    held,
    behaviour: state,
    close: () => new Promise<void>((resolve) => {
      // A held request would keep close() waiting for ever.
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

export type SellerNotifier = Awaited<ReturnType<typeof startSellerNotifier>>;

/**
 * The client a processor uses: one POST per notification, the effect key as Idempotency-Key,
 * `timeoutMs` at most; `lookup` asks whether a key was sent.
 */
export function sellerNotifierClient(url: string, { timeoutMs = 5_000 }: { timeoutMs?: number } = {}) {
  return {
    async notify(notification: { orderId: string; commissionCents: number }, idempotencyKey: string): Promise<{ id: string }> {
      const response = await fetch(`${url}/notifications`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': idempotencyKey },
        body: JSON.stringify(notification),
        signal: AbortSignal.timeout(timeoutMs),
      });
      if (!response.ok) throw new Error(`notifier answered ${response.status}`);
      return (await response.json()) as { id: string };
    },
    /** True when the provider sent a notification with this key, false when it did not. */
    async lookup(idempotencyKey: string): Promise<boolean> {
      const response = await fetch(`${url}/notifications/${encodeURIComponent(idempotencyKey)}`, { signal: AbortSignal.timeout(timeoutMs) });
      await response.body?.cancel();
      if (response.status === 200) return true;
      if (response.status === 404) return false;
      throw new Error(`notifier answered ${response.status} to a lookup`);
    },
  };
}
