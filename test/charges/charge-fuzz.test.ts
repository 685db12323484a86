import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MAX_AMOUNT } from '../../packages/rastro/src/accounts/account.js';
import { backends } from '../support/databases.js';
import { chargeApp } from '../support/charges.js';

/** A request the API must refuse, and how: the status, the problem's code and, for a field, its name. */
interface BadRequest {
  what: string;
  payload: string;
  contentType?: string;
  key?: string;
  status: number;
  code?: string;
  field?: string;
}

const FIELDS = ['amountCents', 'customerId', 'currency'];
/** The charge made first under this key; reusing it with another body is refused. */
const TAKEN = { key: 'taken-key', body: { amountCents: 25_000, customerId: 'customer-1', currency: 'BRL' } };

const freshKey = fc.stringMatching(/^[\x21-\x7e]{1,40}$/).filter((key) => key !== TAKEN.key);
const customer = fc.stringMatching(/^[a-zA-Z0-9 ._-]{1,60}$/).filter((id) => id.trim().length > 0);
const currency = fc.constantFrom('BRL', 'USD', 'EUR');
const amount = fc.integer({ min: 1, max: MAX_AMOUNT });
const validBody = fc.record({ amountCents: amount, customerId: customer, currency }, { requiredKeys: ['amountCents', 'customerId'] });
const otherJson = fc.oneof(fc.constantFrom(null, true, false, [], {}, [1], { a: 1 }), fc.string({ maxLength: 20 }), fc.double(), fc.jsonValue({ maxDepth: 2 }));

const badAmount = fc.oneof(
  fc.integer({ min: -1_000_000_000_000, max: 0 }),
  fc.integer({ min: MAX_AMOUNT + 1, max: Number.MAX_SAFE_INTEGER }),
  fc.double({ noNaN: true, noDefaultInfinity: true }).filter((n) => !Number.isInteger(n) || n < 1 || n > MAX_AMOUNT),
  fc.constantFrom(0, -0, -1, 0.5, 1.5, 99.99, MAX_AMOUNT + 1, 2 ** 53, 2 ** 63, 1e21, 1e308, -1e308, Number.MIN_VALUE),
  fc.string({ maxLength: 12 }),
  fc.constantFrom('100', '1e3', ' 5', '', null, true, false, [], [100], {}, { cents: 100 }),
);
/** Amounts only raw JSON can carry: beyond a double, exponents, more digits than a double holds. */
const rawAmount = fc.constantFrom('1e999', '-1e999', '99999999999999999999', '1e10', '0.0', '-0', '1.0000001', '1E-7');
const badCustomer = fc.oneof(
  fc.constantFrom('', ' ', '   ', '\t', '\n', 'a\u0000b', 'x\u001f', 'del\u007f', 'a'.repeat(201), 'ç'.repeat(201)),
  fc.string({ minLength: 201, maxLength: 400 }),
  fc.tuple(fc.string({ maxLength: 10 }), fc.integer({ min: 0, max: 0x1f }), fc.string({ maxLength: 10 })).map(([a, c, b]) => `${a}${String.fromCharCode(c)}${b}`),
  fc.constantFrom(null, 0, 42, true, [], ['c-1'], {}, { id: 'c-1' }),
);
const badCurrency = fc.oneof(
  fc.constantFrom('', 'brl', 'Brl', 'BR', 'BRLL', 'BR1', ' BRL', 'BRL ', 'R$', 'ÇÃO', null, 986, true, [], ['BRL'], {}),
  fc.string({ maxLength: 8 }).filter((s) => !/^[A-Z]{3}$/.test(s)),
);
/** Field names that are not a charge's; the JSON parser itself refuses __proto__ and constructor.prototype (400). */
const unknownName = fc.oneof(fc.constantFrom('amount', 'amount_cents', 'AmountCents', 'customer', 'status', 'captureId', 'id', 'idempotencyKey', ''), fc.string({ maxLength: 20 })).filter(
  (name) => !FIELDS.includes(name) && name !== '__proto__' && name !== 'constructor',
);
const garbageKey = fc.oneof(
  fc.constantFrom('', ' ', 'with space', ' lead', 'trail ', 'tab\there', 'clé', 'ñ', '\u00ff', 'a'.repeat(256), 'x'.repeat(300)),
  fc.string({ minLength: 256, maxLength: 400 }).filter((key) => /^[\x21-\x7e]+$/.test(key)),
  fc.tuple(fc.string({ maxLength: 10 }), fc.string({ maxLength: 10 })).map(([a, b]) => `${a} ${b}`),
);
const wrongType = fc.constantFrom('text/plain', 'text/json', 'application/x-www-form-urlencoded', 'multipart/form-data', 'application/xml', 'application/jsonx', 'application/json-patch+json', '', undefined);
const malformed = fc.oneof(
  fc.constantFrom('{', '}', '{"amountCents":1,}', "{'amountCents':1}", '{"amountCents":01}', 'NaN', 'undefined', '{"amountCents": NaN}', '{"a":1}{"b":2}', '\u0000'),
  fc.constantFrom('{"__proto__":{"x":1},"amountCents":1,"customerId":"c"}', '{"constructor":{"prototype":{"x":1}},"amountCents":1,"customerId":"c"}'),
  fc.string({ maxLength: 30 }).filter((s) => {
    try {
      JSON.parse(s);
      return false;
    } catch {
      return s.trim().length > 0;
    }
  }),
);

const json = (value: unknown) => JSON.stringify(value);
const bad: fc.Arbitrary<BadRequest> = fc.oneof(
  validBody.map((body) => ({ what: 'no Idempotency-Key', payload: json(body), status: 400, code: 'RASTRO_IDEMPOTENCY_KEY_REQUIRED' })),
  fc.oneof(otherJson, badAmount).map((body) => ({ what: 'no Idempotency-Key, bad body', payload: json(body) ?? 'null', status: 400, code: 'RASTRO_IDEMPOTENCY_KEY_REQUIRED' })),
  validBody
    .filter((body) => body.amountCents !== TAKEN.body.amountCents || body.customerId !== TAKEN.body.customerId || (body.currency ?? 'BRL') !== TAKEN.body.currency)
    .map((body) => ({ what: 'a reused key, another body', key: TAKEN.key, payload: json(body), status: 422, code: 'RASTRO_IDEMPOTENCY_KEY_REUSED' })),
  fc.tuple(freshKey, badAmount, customer).map(([key, value, id]) => ({ what: 'bad amount', key, payload: json({ amountCents: value, customerId: id }), status: 422, field: 'amountCents' })),
  fc.tuple(freshKey, rawAmount, customer).map(([key, value, id]) => ({ what: 'bad raw amount', key, payload: `{"amountCents":${value},"customerId":${json(id)}}`, status: 422, field: 'amountCents' })),
  fc.tuple(freshKey, amount, badCustomer).map(([key, value, id]) => ({ what: 'bad customerId', key, payload: json({ amountCents: value, customerId: id }), status: 422, field: 'customerId' })),
  fc.tuple(freshKey, validBody, badCurrency).map(([key, body, code]) => ({ what: 'bad currency', key, payload: json({ ...body, currency: code }), status: 422, field: 'currency' })),
  fc.tuple(freshKey, validBody, unknownName, otherJson).map(([key, body, name, value]) => ({ what: 'unknown field', key, payload: json({ ...body, [name]: value }), status: 422, field: name })),
  // The key is checked before the body, and on a reused key the body before the reuse.
  fc.tuple(garbageKey, fc.oneof(validBody, otherJson)).map(([key, body]) => ({ what: 'garbage key', key, payload: json(body) ?? 'null', status: 422, field: 'Idempotency-Key' })),
  fc.tuple(fc.constantFrom(TAKEN.key), badAmount).map(([key, value]) => ({ what: 'reused key, bad body', key, payload: json({ ...TAKEN.body, amountCents: value }), status: 422, field: 'amountCents' })),
  fc.tuple(freshKey, fc.constantFrom(null, true, false, 0, 1, 25_000, 'text', '', [], [TAKEN.body], [1, 2])).map(([key, body]) => ({ what: 'not an object', key, payload: json(body), status: 422, field: 'body' })),
  fc.tuple(freshKey, validBody, wrongType).map(([key, body, type]) => ({ what: 'wrong content type', key, payload: json(body), contentType: type ?? 'none', status: 415 })),
  fc.tuple(freshKey, malformed).map(([key, payload]) => ({ what: 'malformed JSON', key, payload, status: 400 })),
  fc.tuple(freshKey, fc.integer({ min: 64 * 1024 + 1, max: 200_000 })).map(([key, size]) => ({ what: 'oversized body', key, payload: json({ amountCents: 100, customerId: 'c'.repeat(size) }), status: 413 })),
);

describe.each(backends())('fuzzing POST /charges on $name', (backend) => {
  it('refuses bad input with a problem naming what is wrong, never a 5xx, and writes nothing (1,500 cases)', async () => {
    const t = await chargeApp(backend);
    const first = await t.charge(TAKEN.body, TAKEN.key);
    expect(first.statusCode).toBe(201);
    const counts = async () => ({ charges: await t.count('charges'), effects: await t.count('effects'), outbox: await t.count('outbox'), captures: t.acquirer.stats.captureRequests });
    const before = await counts();
    expect(before).toEqual({ charges: 1, effects: 1, outbox: 2, captures: 1 });

    const seen = new Map<string, number>();
    await fc.assert(
      fc.asyncProperty(bad, async (request) => {
        seen.set(request.what, (seen.get(request.what) ?? 0) + 1);
        const headers: Record<string, string> = {};
        if (request.contentType === undefined) headers['content-type'] = 'application/json';
        else if (request.contentType !== 'none') headers['content-type'] = request.contentType;
        if (request.key !== undefined) headers['idempotency-key'] = request.key;
        const res = await t.app.inject({ method: 'POST', url: '/charges', headers, payload: request.payload });
        const label = `${request.what}: ${request.payload.slice(0, 120)} key=${JSON.stringify(request.key)?.slice(0, 60)} → ${res.statusCode} ${res.body.slice(0, 300)}`;
        expect(res.statusCode, label).toBe(request.status);
        expect(res.headers['content-type'], label).toContain('application/problem+json');
        const problem = res.json<{ status: number; detail: string; code?: string; field?: string }>();
        expect(problem.status, label).toBe(request.status);
        expect(problem.detail.length, label).toBeGreaterThan(0);
        if (request.code) expect(problem.code, label).toBe(request.code);
        if (request.field !== undefined) {
          expect(problem, label).toMatchObject({ field: request.field });
          // Text the database cannot store is refused at the boundary, before the schema.
          expect(['RASTRO_VALIDATION', 'RASTRO_UNSTORABLE_TEXT'], label).toContain(problem.code);
          expect(problem.detail.startsWith(`${request.field}: `), label).toBe(true);
        }
        expect(res.body, label).not.toMatch(/ at .*\.(ts|js):\d+|select |insert |update |\$1/i);
        expect(await counts(), label).toEqual(before);
      }),
      { numRuns: 1_500, seed: 20261201 },
    );
    // Every kind of bad input was tried, many times.
    expect(seen.size).toBe(14);
    for (const [what, n] of seen) expect(n, what).toBeGreaterThanOrEqual(40);
    expect(t.acquirer.captures.size).toBe(1);
    expect(t.acquirer.requestsFor.size).toBe(1);

    // The same key with the same body (the currency left to its default) is a replay, not a refusal.
    const replay = await t.charge({ amountCents: TAKEN.body.amountCents, customerId: TAKEN.body.customerId }, TAKEN.key);
    expect(replay.statusCode).toBe(201);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(await counts()).toEqual(before);
  }, 300_000);
});
