import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { backends } from '../support/databases.js';
import { testApp } from '../support/app.js';

const jsonValue = fc.jsonValue({ maxDepth: 3 });
const amountLike = fc.oneof(
  fc.integer({ min: -2, max: 1_000_000_002 }),
  fc.double({ noNaN: false }),
  fc.string(),
  fc.constantFrom(null, true, false, [], {}, 1e21, -0, 2 ** 53, '1e3', ' 5'),
);
const body = fc.oneof(
  fc.record({ amount: amountLike }, { requiredKeys: [] }),
  fc.record({ owner: fc.oneof(fc.string({ maxLength: 250 }), jsonValue) }, { requiredKeys: [] }),
  jsonValue,
);
const rawPayload = fc.oneof(
  body.map((value) => JSON.stringify(value) ?? 'null'),
  fc.string(),
  fc.constantFrom('{', '{"amount":1,}', '{"__proto__":{"a":1}}', '{"constructor":{"prototype":{}}}', '\u0000', '[]', 'null', '""'),
);
const header = fc.option(fc.string({ maxLength: 300 }), { nil: undefined });
const contentType = fc.constantFrom('application/json', 'application/json; charset=utf-8', 'text/plain', 'application/x-www-form-urlencoded', 'APPLICATION/JSON', '', undefined);
const segment = fc.oneof(fc.string({ maxLength: 40 }).map(encodeURIComponent), fc.constantFrom('..', '%00', '%ZZ', 'balance', 'accounts'));

describe.each(backends())('fuzzing the API on $name', (backend) => {
  it('never answers 5xx and never appends an event for a rejected request (2,000+ cases)', async () => {
    const t = await testApp(backend);
    const account = await t.openAccount();
    await t.post(`/accounts/${account}/deposit`, { amount: 1_000 });
    const route = fc.oneof(
      fc.constantFrom('/accounts', `/accounts/${account}/deposit`, `/accounts/${account}/withdraw`, `/accounts/${account}/balance`, `/accounts/${account}/events`),
      fc.tuple(segment, fc.constantFrom('deposit', 'withdraw', 'balance', 'events')).map(([id, leaf]) => `/accounts/${id}/${leaf}`),
      fc.array(segment, { minLength: 1, maxLength: 4 }).map((parts) => `/${parts.join('/')}`),
      fc.tuple(fc.constantFrom(`/accounts/${account}/events`), fc.string({ maxLength: 20 }), fc.string({ maxLength: 20 })).map(
        ([path, after, limit]) => `${path}?after=${encodeURIComponent(after)}&limit=${encodeURIComponent(limit)}`,
      ),
    );
    const request = fc.record({
      method: fc.constantFrom('GET', 'POST', 'POST', 'POST', 'PUT', 'DELETE', 'PATCH'),
      url: route,
      payload: rawPayload,
      contentType,
      idempotencyKey: header,
      ifMatch: header,
    });

    let cases = 0;
    await fc.assert(
      fc.asyncProperty(request, async ({ method, url, payload, contentType: type, idempotencyKey, ifMatch }) => {
        cases++;
        const before = await t.eventCount();
        const headers: Record<string, string> = {};
        if (type !== undefined) headers['content-type'] = type;
        if (idempotencyKey !== undefined) headers['idempotency-key'] = idempotencyKey;
        if (ifMatch !== undefined) headers['if-match'] = ifMatch;
        const res = await t.app.inject({ method: method as 'GET', url, headers, ...(method === 'GET' ? {} : { payload }) });
        expect(res.statusCode, `${method} ${url} ${payload}`).toBeLessThan(500);
        if (res.statusCode >= 400) {
          expect(await t.eventCount()).toBe(before);
          expect(res.headers['content-type']).toContain('application/problem+json');
          expect(res.body).not.toMatch(/ at .*\.(ts|js):\d+|select |insert |\$1/i);
        }
      }),
      { numRuns: 2_000, seed: 20261129 },
    );
    expect(cases).toBeGreaterThanOrEqual(2_000);
  }, 300_000);
});
