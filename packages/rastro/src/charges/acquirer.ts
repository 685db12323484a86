import { withAcquirerSpan } from '../observability/tracing.js';
import { EffectDeclinedError } from '../processing/ledger/effect-type.js';
import { acquirerHttp, type AcquirerAnswer } from './acquirer-http.js';

/** What a charge asks the acquirer to capture. */
export interface CaptureRequest {
  amountCents: number;
  currency: string;
  customerId: string;
}

/** A capture the acquirer made. */
export interface Capture {
  captureId: string;
  amountCents: number;
  currency: string;
}

/** A capture as the acquirer lists it: by the idempotency key it was made with, and when. */
export interface ListedCapture extends Capture {
  idempotencyKey: string;
  capturedAt: Date;
}

/** The acquirer's answer about a key: captured, never captured (`not_found`), or it cannot say. */
export type CaptureLookup = { status: 'captured'; capture: Capture } | { status: 'not_found' } | { status: 'unknown' };

/**
 * The card acquirer, as charges use it. Captures are deduplicated by the idempotency key, so
 * sending one again with the same key is safe.
 */
export interface Acquirer {
  /** Captures, or returns the capture already made with this key. Throws {@link CaptureDeclinedError} for a refusal; any other error is ambiguous. */
  capture(idempotencyKey: string, request: CaptureRequest, options: { signal: AbortSignal }): Promise<Capture>;
  lookup(idempotencyKey: string, options: { signal: AbortSignal }): Promise<CaptureLookup>;
  /** Cancels with the same key: resolves true when the acquirer confirmed nothing is (or stays) captured. */
  void?(idempotencyKey: string, options: { signal: AbortSignal }): Promise<boolean>;
  /**
   * Every standing capture made since `since`, oldest first, page after page: what `rastro audit
   * --ask-providers` compares with the charges here, to find captures whose charge the database
   * lost (an asynchronous failover's lost tail).
   */
  listCaptures?(since: Date, options: { signal: AbortSignal }): AsyncIterable<ListedCapture>;
}

/** The acquirer refused the capture (a declined card): certainly not captured. */
export class CaptureDeclinedError extends EffectDeclinedError {
  constructor(reason: string) {
    super(`the acquirer declined the capture: ${reason}`);
    this.name = 'CaptureDeclinedError';
  }
}

function capture(body: Record<string, unknown>): Capture {
  if (typeof body.captureId !== 'string' || typeof body.amountCents !== 'number' || typeof body.currency !== 'string') {
    throw new Error('the acquirer answered a capture without captureId, amountCents and currency');
  }
  return { captureId: body.captureId, amountCents: body.amountCents, currency: body.currency };
}

/** One page of `GET /captures?since=…`: its captures and the cursor of the next page, if any. */
async function capturePage(request: ReturnType<typeof acquirerHttp>, url: string, since: Date, after: string | null, signal: AbortSignal): Promise<{ captures: ListedCapture[]; next: string | null }> {
  const query = new URLSearchParams({ since: since.toISOString(), limit: '500', ...(after ? { after } : {}) });
  const { status, body } = await request(`${url}/captures?${query}`, { headers: {}, signal });
  if (status !== 200 || !Array.isArray(body.captures)) throw new Error(`the acquirer answered ${status} to a list of captures`);
  const captures = (body.captures as Record<string, unknown>[]).map((item) => {
    const at = new Date(String(item.capturedAt));
    if (typeof item.idempotencyKey !== 'string' || !Number.isFinite(at.getTime())) throw new Error('the acquirer listed a capture without idempotencyKey and capturedAt');
    return { ...capture(item), idempotencyKey: item.idempotencyKey, capturedAt: at };
  });
  return { captures, next: typeof body.next === 'string' ? body.next : null };
}

/**
 * An acquirer's REST API: `POST /captures` with an `Idempotency-Key` header, `GET /captures/{key}`,
 * `POST /captures/{key}/void` and `GET /captures?since=` (docs/charges.md). A 402 is a decline; a
 * timeout, a reset or a 5xx is ambiguous (the capture may have happened) and thrown as is.
 */
export function acquirerClient(baseUrl: string): Acquirer {
  const url = baseUrl.replace(/\/+$/, '');
  const request = acquirerHttp(url);
  // Each call is a client span; its traceparent goes to the acquirer with the request.
  const call = <T>(operation: string, key: string, fn: (headers: Record<string, string>) => Promise<{ answer: AcquirerAnswer; value: () => T }>) =>
    withAcquirerSpan(operation, { 'rastro.charge.idempotency_key': key }, async (traceHeaders, span) => {
      const { answer, value } = await fn({ ...traceHeaders });
      span.setAttribute('http.response.status_code', answer.status);
      return value();
    });
  return {
    capture: (idempotencyKey, captureRequest, { signal }) =>
      call('capture', idempotencyKey, async (headers) => {
        const answer = await request(`${url}/captures`, {
          method: 'POST',
          headers: { ...headers, 'content-type': 'application/json', 'idempotency-key': idempotencyKey },
          body: JSON.stringify(captureRequest),
          signal,
        });
        const { status, body } = answer;
        return {
          answer,
          value: () => {
            if (status === 200 || status === 201) return capture(body);
            if (status === 402) throw new CaptureDeclinedError(typeof body.reason === 'string' ? body.reason : 'declined');
            throw new Error(`the acquirer answered ${status} to a capture`);
          },
        };
      }),
    lookup: (idempotencyKey, { signal }) =>
      call('lookup', idempotencyKey, async (headers) => {
        const answer = await request(`${url}/captures/${encodeURIComponent(idempotencyKey)}`, { headers, signal });
        const { status, body } = answer;
        return {
          answer,
          value: (): CaptureLookup => {
            if (status === 200 && body.status === 'captured') return { status: 'captured', capture: capture(body) };
            if (status === 404 && body.status === 'not_found') return { status: 'not_found' };
            return { status: 'unknown' };
          },
        };
      }),
    void: (idempotencyKey, { signal }) =>
      call('void', idempotencyKey, async (headers) => {
        const answer = await request(`${url}/captures/${encodeURIComponent(idempotencyKey)}/void`, { method: 'POST', headers, signal });
        return { answer, value: () => answer.status === 200 && answer.body.status === 'voided' };
      }),
    async *listCaptures(since, { signal }) {
      let after: string | null = null;
      do {
        const page = await capturePage(request, url, since, after, signal);
        yield* page.captures;
        after = page.next;
      } while (after !== null);
    },
  };
}
