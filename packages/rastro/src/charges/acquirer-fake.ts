import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/**
 * What the fake does with the next capture request (one fault per request, in order):
 * - `fail-before`: answers 503 without capturing;
 * - `decline`: answers 402, nothing captured;
 * - `capture-then-timeout`: captures, then never answers (the caller times out);
 * - `capture-then-500`: captures, then answers 500;
 * - `capture-then-reset`: captures, then drops the connection.
 */
export type CaptureFault = 'fail-before' | 'decline' | 'capture-then-timeout' | 'capture-then-500' | 'capture-then-reset';

export interface FakeCapture {
  captureId: string;
  key: string;
  amountCents: number;
  currency: string;
  customerId: string;
  voided: boolean;
  capturedAt: Date;
}

export interface AcquirerFakeOptions {
  /** Delay before each capture, in ms. */
  delayMs?: number;
  /** Delay before each lookup answer, in ms. */
  lookupDelayMs?: number;
  /** Called after a capture is made, before the answer is sent (tests kill the caller here). */
  onCapture?: (capture: FakeCapture) => void;
  /** Whether `POST /captures/{key}/void` is offered. @defaultValue true */
  voids?: boolean;
}

function read(request: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let body = '';
    request.setEncoding('utf8');
    request.on('data', (chunk: string) => (body += chunk));
    request.on('end', () => resolve(body));
    request.on('error', reject);
  });
}

function send(response: ServerResponse, status: number, body: unknown): void {
  response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

/**
 * A card acquirer as a real HTTP server, for tests and `rastro demo charges`. It deduplicates
 * captures by `Idempotency-Key` (a repeat returns the first capture), answers
 * `GET /captures/{key}` with `captured`, `not_found` or `unknown`, lists captures since a time
 * (`GET /captures?since=`), voids with the same key, and
 * injects faults per request. It counts what it really captured, to compare with local rows.
 */
export async function startAcquirerFake(options: AcquirerFakeOptions = {}) {
  const captures = new Map<string, FakeCapture>();
  const voided = new Set<string>();
  /** Faults for the next capture requests, in order; `faultsFor` is per key, before these. */
  const faults: CaptureFault[] = [];
  const faultsFor = new Map<string, CaptureFault[]>();
  /** Lookups of these keys (or, under '*', of any key) answer `unknown` this many more times. */
  const unknownLookups = new Map<string, number>();
  const stats = { captureRequests: 0, lookups: 0, voids: 0 };
  /**
   * Requests per key: capture requests, lookups, and `repeats`, the capture requests that found
   * the key already captured (answered with the first capture: a caller that captured again
   * without asking first, which an acquirer that cannot deduplicate would have charged twice),
   * and the trace context the last capture request carried.
   */
  const requestsFor = new Map<string, { captures: number; lookups: number; repeats: number; traceparent?: string }>();
  const count = (key: string, what: 'captures' | 'lookups' | 'repeats') => {
    const entry = requestsFor.get(key) ?? { captures: 0, lookups: 0, repeats: 0 };
    entry[what]++;
    requestsFor.set(key, entry);
  };
  const sockets = new Set<Socket>();
  /** Hooks a test can set after the start. */
  const hooks: { onCapture?: (capture: FakeCapture) => void } = { onCapture: options.onCapture };

  const nextFault = (key: string): CaptureFault | undefined => faultsFor.get(key)?.shift() ?? faults.shift();

  /** `GET /captures?since=<ISO>&after=<cursor>&limit=<n>`: standing captures made since, oldest first, a page at a time. */
  function listCaptures(request: IncomingMessage, response: ServerResponse): void {
    const query = new URL(request.url ?? '/', 'http://fake').searchParams;
    const since = new Date(query.get('since') ?? '');
    if (!Number.isFinite(since.getTime())) return send(response, 400, { error: 'since must be an ISO 8601 time' });
    const limit = Math.min(1000, Math.max(1, Number(query.get('limit') ?? 100) || 100));
    const after = Number(query.get('after') ?? 0);
    const standing = [...captures.values()].filter((c) => !c.voided && c.capturedAt >= since);
    const page = standing.slice(after, after + limit);
    send(response, 200, {
      captures: page.map((c) => ({ idempotencyKey: c.key, captureId: c.captureId, amountCents: c.amountCents, currency: c.currency, capturedAt: c.capturedAt.toISOString() })),
      next: after + limit < standing.length ? String(after + limit) : null,
    });
  }

  const server: Server = createServer(async (request, response) => {
    try {
      const path = (request.url ?? '/').split('?')[0]!;
      const keyed = /^\/captures\/([^/]+)(\/void)?$/.exec(path);
      if (request.method === 'POST' && path === '/captures') {
        stats.captureRequests++;
        const key = request.headers['idempotency-key'];
        if (typeof key !== 'string' || key.length === 0) return send(response, 400, { error: 'Idempotency-Key is required' });
        count(key, 'captures');
        const traceparent = request.headers.traceparent;
        if (typeof traceparent === 'string') requestsFor.get(key)!.traceparent = traceparent;
        let body: { amountCents?: unknown; currency?: unknown; customerId?: unknown };
        try {
          body = JSON.parse(await read(request)) as typeof body;
        } catch {
          return send(response, 400, { error: 'the body is not JSON' });
        }
        if (!Number.isInteger(body.amountCents) || typeof body.currency !== 'string' || typeof body.customerId !== 'string') {
          return send(response, 400, { error: 'amountCents, currency and customerId are required' });
        }
        if (options.delayMs) await new Promise((resolve) => setTimeout(resolve, options.delayMs));
        const fault = nextFault(key);
        if (fault === 'fail-before') return send(response, 503, { error: 'unavailable' });
        if (voided.has(key)) return send(response, 402, { status: 'declined', reason: 'voided' });
        const existing = captures.get(key);
        if (existing && (existing.amountCents !== body.amountCents || existing.currency !== body.currency)) {
          return send(response, 422, { error: 'this Idempotency-Key was used for another capture' });
        }
        if (existing) count(key, 'repeats');
        if (fault === 'decline' && !existing) return send(response, 402, { status: 'declined', reason: 'insufficient funds' });
        const capture = existing ?? { captureId: `cap_${randomUUID()}`, key, amountCents: body.amountCents as number, currency: body.currency, customerId: body.customerId, voided: false, capturedAt: new Date() };
        if (!existing) {
          captures.set(key, capture);
          hooks.onCapture?.(capture);
        }
        if (fault === 'capture-then-timeout') return; // never answers
        if (fault === 'capture-then-500') return send(response, 500, { error: 'internal error' });
        if (fault === 'capture-then-reset') return void request.socket.destroy();
        return send(response, existing ? 200 : 201, { status: 'captured', captureId: capture.captureId, amountCents: capture.amountCents, currency: capture.currency });
      }
      if (request.method === 'GET' && path === '/captures') return listCaptures(request, response);
      if (request.method === 'GET' && keyed && !keyed[2]) {
        stats.lookups++;
        const key = decodeURIComponent(keyed[1]!);
        count(key, 'lookups');
        if (options.lookupDelayMs) await new Promise((resolve) => setTimeout(resolve, options.lookupDelayMs));
        for (const name of [key, '*']) {
          const left = unknownLookups.get(name) ?? 0;
          if (left > 0) {
            unknownLookups.set(name, left - 1);
            return send(response, 200, { status: 'unknown' });
          }
        }
        const capture = captures.get(key);
        if (capture && !capture.voided) return send(response, 200, { status: 'captured', captureId: capture.captureId, amountCents: capture.amountCents, currency: capture.currency });
        return send(response, 404, { status: 'not_found' });
      }
      if (request.method === 'POST' && keyed?.[2] && options.voids !== false) {
        stats.voids++;
        const key = decodeURIComponent(keyed[1]!);
        voided.add(key);
        const capture = captures.get(key);
        if (capture) capture.voided = true;
        return send(response, 200, { status: 'voided' });
      }
      send(response, 404, { error: 'no such route' });
    } catch {
      if (!response.headersSent) send(response, 500, { error: 'internal error' });
    }
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  return {
    url,
    /** Captures made, by key (voided ones stay, marked). */
    captures,
    faults,
    faultsFor,
    unknownLookups,
    stats,
    requestsFor,
    hooks,
    /** Captures standing (not voided). */
    captured(): FakeCapture[] {
      return [...captures.values()].filter((capture) => !capture.voided);
    },
    close(): Promise<void> {
      for (const socket of sockets) socket.destroy();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export type AcquirerFake = Awaited<ReturnType<typeof startAcquirerFake>>;
