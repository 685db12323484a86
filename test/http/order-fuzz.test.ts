import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ORDER_STATUSES } from '../../src/intake/order-snapshot.js';
import { backends } from '../support/databases.js';
import { testApp } from '../support/app.js';

/** A snapshot whose payload nests `depth` arrays deep, as raw JSON (fast-check cannot hold such a value). */
const nestedBody = (depth: number) => `{"orderId":"1","status":"received","deep":${'['.repeat(depth)}${']'.repeat(depth)}}`;
const lastUpdate = fc.oneof(
  fc.date({ noInvalidDate: true }).map((date) => date.toISOString()),
  fc.string({ maxLength: 40 }),
  fc.constantFrom(null, 0, '2026-09-08T08:54:24-03:00', '2026-09-08T08:54:24', '2026-13-01T00:00:00Z', '9999-12-31T23:59:59.999999999+23:59', '0000-01-01T00:00:00Z'),
);
const snapshot = fc.record(
  {
    orderId: fc.oneof(fc.string({ maxLength: 70 }), fc.integer(), fc.constantFrom('260065713', '', null, 1.5, -1)),
    status: fc.oneof(fc.constantFrom(...ORDER_STATUSES), fc.string({ maxLength: 12 })),
    lastUpdate,
    invoice: fc.jsonValue({ maxDepth: 3 }),
    text: fc.constantFrom(undefined, 'ok', '\u0000'),
  },
  { requiredKeys: [] },
);
const payload = fc.oneof(snapshot.map((body) => JSON.stringify(body)), fc.constantFrom(nestedBody(31), nestedBody(40), nestedBody(20_000)), fc.jsonValue({ maxDepth: 2 }).map((value) => JSON.stringify(value) ?? 'null'), fc.string({ maxLength: 30 }));
const source = fc.oneof(fc.constantFrom('pied', 'pied', 'p_1', 'Pied', '-x', 'a'.repeat(41)), fc.string({ maxLength: 12 }).map(encodeURIComponent));

function orderIdOf(body: string): unknown {
  try {
    return (JSON.parse(body) as { orderId?: unknown } | null)?.orderId ?? '1';
  } catch {
    return '1';
  }
}

describe.each(backends())('fuzzing the order routes on $name', (backend) => {
  it('never answers 5xx, and a refused snapshot stores nothing', async () => {
    const t = await testApp(backend);
    await fc.assert(
      fc.asyncProperty(source, payload, fc.constantFrom('POST /intake', 'GET /orders', 'POST /import', 'POST /renormalize'), async (src, body, route) => {
        const before = await t.eventCount();
        const order = `${src}:${encodeURIComponent(String(orderIdOf(body)))}`;
        const res =
          route === 'POST /intake' ? await t.app.inject({ method: 'POST', url: `/intake/${src}/orders`, payload: body, headers: { 'content-type': 'application/json' } })
          : route === 'GET /orders' ? await t.get(`/orders/${order}`)
          : await t.app.inject({ method: 'POST', url: `/orders/${order}${route.slice(5)}`, payload: body, headers: { 'content-type': 'application/json' } });
        expect(res.statusCode, `${route} ${src} ${body.slice(0, 200)}`).toBeLessThan(500);
        if (res.statusCode >= 400) {
          expect(await t.eventCount()).toBe(before);
          expect(res.headers['content-type']).toContain('application/problem+json');
          expect(res.body).not.toMatch(/ at .*\.(ts|js):\d+|select |insert |\$1/i);
        }
      }),
      { numRuns: 400, seed: 20261201 },
    );
  }, 300_000);
});
