import type { InjectOptions } from 'fastify';
import { describe, expect, it } from 'vitest';
import { testApp, type TestApp } from '../support/app.js';
import { backends } from '../support/databases.js';

/**
 * A fuzz suite generated from the served OpenAPI document: every operation, every parameter
 * and every body field to its full depth gets hostile values, so a new route is covered
 * without new test code. Each field gets a seeded sample of the values below, to keep the run short.
 */

type Schema = { type?: string | string[]; properties?: Record<string, Schema>; required?: string[]; enum?: unknown[]; anyOf?: Schema[]; items?: Schema; minimum?: number; maximum?: number; pattern?: string; default?: unknown; format?: string };
type Parameter = { name: string; in: 'path' | 'query' | 'header'; schema?: Schema; required?: boolean };
type Operation = { parameters?: Parameter[]; requestBody?: { content?: Record<string, { schema?: Schema }> } };

const HOSTILE_STRINGS = ['a\ud800b', '\udfff', 'a\u0000b', '\u0000', 'ctl\u0007\u001b[31m', 'x'.repeat(10_000), 'e\u0301', '\u00e9', '\ufb01', '/', '%2F', '..', '../../etc/passwd', '', ' ', '😀'];
const HOSTILE_NUMBERS = [0, -1, 1.5, 2 ** 53, 1e21, -0, 1_000_000_001, Number.MAX_SAFE_INTEGER];
const WRONG_TYPES = [true, null, [], {}, '1', 1, { nested: '\u0000' }, ['\ud800']];
const RAW_BODIES = ['{', '{"a":1,}', '{"__proto__":{"x":1}}', '{"constructor":{"prototype":{}}}', `{"deep":${'['.repeat(20_000)}${']'.repeat(20_000)}}`, '[]', 'null', '""', '{"\\ud800":1}'];
const SAMPLES_PER_FIELD = 5;

/** A small seeded generator (mulberry32): the same cases on every run. */
function random(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function sample<T>(values: readonly T[], count: number, next: () => number): T[] {
  const pool = [...values];
  const picked: T[] = [];
  while (picked.length < count && pool.length > 0) picked.push(pool.splice(Math.floor(next() * pool.length), 1)[0]!);
  return picked;
}

/** Percent-encoding, lone surrogates included (as the three bytes a careless client would send). */
function encode(text: string): string {
  return text.replace(/[\ud800-\udbff][\udc00-\udfff]|[\s\S]/g, (unit) => {
    try {
      return encodeURIComponent(unit);
    } catch {
      const cp = unit.charCodeAt(0);
      return [0xe0 | (cp >> 12), 0x80 | ((cp >> 6) & 0x3f), 0x80 | (cp & 0x3f)].map((byte) => `%${byte.toString(16).toUpperCase()}`).join('');
    }
  });
}

function typeOf(schema: Schema): string | undefined {
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  return type ?? schema.anyOf?.map(typeOf).find(Boolean);
}

/** A value the schema accepts, as far as a schema can tell: required fields only. */
function validValue(schema: Schema, name: string, world: World): unknown {
  if (schema.enum) return schema.enum[0];
  if (schema.default !== undefined) return schema.default;
  switch (typeOf(schema)) {
    case 'integer':
    case 'number':
      return Math.max(schema.minimum ?? 1, 1);
    case 'boolean':
      return true;
    case 'array':
      return [];
    case 'object': {
      const body: Record<string, unknown> = {};
      for (const key of schema.required ?? []) body[key] = validValue(schema.properties?.[key] ?? {}, key, world);
      return body;
    }
    default:
      return world.sample(name, schema);
  }
}

/** Every field of a body schema, to full depth: its path as a list of keys, and its schema. */
function fields(schema: Schema, path: string[] = []): { path: string[]; schema: Schema }[] {
  const found: { path: string[]; schema: Schema }[] = [];
  for (const [key, child] of Object.entries(schema.properties ?? {})) {
    found.push({ path: [...path, key], schema: child });
    found.push(...fields(child, [...path, key]));
  }
  return found;
}

function withField(body: unknown, path: string[], value: unknown): unknown {
  const copy = structuredClone(body ?? {}) as Record<string, unknown>;
  let at = copy;
  for (const key of path.slice(0, -1)) at = (at[key] ??= {}) as Record<string, unknown>;
  at[path.at(-1)!] = value;
  return copy;
}

function hostileFor(schema: Schema, next: () => number): unknown[] {
  const type = typeOf(schema);
  const own = type === 'integer' || type === 'number' ? HOSTILE_NUMBERS : HOSTILE_STRINGS;
  const bounds = [schema.minimum, schema.maximum].filter((n): n is number => n !== undefined).flatMap((n) => [n, n - 1, n + 1]);
  return [...sample([...own, ...bounds], SAMPLES_PER_FIELD - 1, next), ...sample(WRONG_TYPES, 1, next)];
}

interface World {
  sample(name: string, schema: Schema): string;
}

interface Case {
  what: string;
  options: InjectOptions;
}

/** The requests for one operation: its valid shape, then each parameter and body field made hostile. */
function casesFor(method: string, path: string, operation: Operation, world: World, next: () => number): Case[] {
  const params = operation.parameters ?? [];
  const bodySchema = operation.requestBody?.content?.['application/json']?.schema;
  const base = () => ({
    path: Object.fromEntries(params.filter((p) => p.in === 'path').map((p) => [p.name, encode(world.sample(p.name, p.schema ?? {}))])),
    query: {} as Record<string, string>,
    headers: { 'content-type': 'application/json' } as Record<string, string>,
    body: bodySchema ? JSON.stringify(validValue(bodySchema, 'body', world)) : method === 'post' ? '{}' : undefined,
  });
  const build = (what: string, parts: ReturnType<typeof base>): Case => {
    const url = path.replace(/\{([^}]+)\}/g, (_m, name: string) => parts.path[name] ?? 'x');
    const query = Object.entries(parts.query).map(([name, value]) => `${encode(name)}=${encode(value)}`).join('&');
    return { what, options: { method: method.toUpperCase() as 'GET', url: query ? `${url}?${query}` : url, headers: parts.headers, ...(parts.body !== undefined && method !== 'get' ? { payload: parts.body } : {}) } };
  };
  const cases = [build('as documented', base())];
  for (const param of params) {
    for (const value of hostileFor(param.schema ?? {}, next)) {
      const parts = base();
      const text = typeof value === 'string' ? value : JSON.stringify(value);
      if (param.in === 'path') parts.path[param.name] = value === '%2F' || value === '..' ? value : encode(text);
      else if (param.in === 'query') parts.query[param.name] = text;
      else if (/^[\t\x20-\x7e\x80-\xff]*$/.test(text)) parts.headers[param.name] = text; // what HTTP can carry in a header
      else continue;
      cases.push(build(`${param.in} ${param.name} = ${JSON.stringify(text).slice(0, 40)}`, parts));
    }
  }
  if (bodySchema) {
    const valid = validValue(bodySchema, 'body', world);
    for (const field of fields(bodySchema)) {
      for (const value of hostileFor(field.schema, next)) {
        cases.push(build(`body ${field.path.join('.')} = ${JSON.stringify(value)?.slice(0, 40)}`, { ...base(), body: JSON.stringify(withField(valid, field.path, value)) }));
      }
    }
    cases.push(build('body with a lone surrogate key', { ...base(), body: JSON.stringify({ ...(valid as object), '\ud800': 1 }) }));
  }
  if (method !== 'get') for (const raw of sample(RAW_BODIES, 3, next)) cases.push(build(`raw body ${raw.slice(0, 30)}`, { ...base(), body: raw }));
  return cases;
}

async function seed(t: TestApp): Promise<World> {
  const account = await t.openAccount();
  await t.post(`/accounts/${account}/deposit`, { amount: 500 });
  await t.post('/intake/pied/orders', { orderId: '1', status: 'received' });
  const samples: Record<string, string> = { id: account, source: 'pied', runId: 'run-1', key: 'k:notify', eventId: crypto.randomUUID(), messageId: crypto.randomUUID() };
  return {
    sample: (name, schema) => (name === 'id' && schema.pattern === undefined ? samples.id! : samples[name] ?? (schema.format === 'date-time' ? '2026-01-01T00:00:00Z' : 'a1')),
  };
}

/** The answers a route may give that are not the request's fault nor a fault: no acquirer is configured. */
const CONFIGURATION_ANSWERS = new Set(['RASTRO_NO_ACQUIRER']);

describe.each(backends())('fuzzing every operation of the OpenAPI document on $name', (backend) => {
  it('never answers 5xx or slowly, refuses with problem+json naming the field, and writes nothing it refused', async () => {
    const t = await testApp(backend);
    const world = await seed(t);
    const document = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json<{ paths: Record<string, Record<string, Operation>> }>();
    const next = random(20261202);
    const cases = Object.entries(document.paths).flatMap(([path, operations]) =>
      Object.entries(operations)
        .filter(([method]) => ['get', 'post', 'put', 'patch', 'delete'].includes(method))
        .flatMap(([method, operation]) => casesFor(method, path, operation, world, next).map((c) => ({ ...c, label: `${method.toUpperCase()} ${path}: ${c.what}` }))),
    );
    expect(new Set(cases.map((c) => c.label.split(':')[0])).size).toBeGreaterThanOrEqual(25);

    let refused = 0;
    for (const { label, options } of cases) {
      const before = await t.rowCounts();
      const started = performance.now();
      const res = await t.app.inject(options);
      const elapsed = performance.now() - started;
      const problem = String(res.headers['content-type'] ?? '').includes('json') && res.body ? (JSON.parse(res.body) as { code?: string; field?: string; detail?: string }) : {};
      expect(elapsed, label).toBeLessThan(5_000);
      if (res.statusCode >= 500) expect(CONFIGURATION_ANSWERS.has(problem.code ?? ''), `${label} → ${res.statusCode} ${res.body.slice(0, 300)}`).toBe(true);
      if (res.statusCode < 400) continue;
      refused++;
      expect(res.headers['content-type'], label).toContain('application/problem+json');
      expect(res.body, label).not.toMatch(/ at .*\.(ts|js):\d+|select |insert |\$1/i);
      if (problem.code === 'RASTRO_VALIDATION' || problem.code === 'RASTRO_UNSTORABLE_TEXT') expect(problem.field, `${label} → ${res.body.slice(0, 300)}`).toBeTruthy();
      const after = await t.rowCounts();
      // A refusal stored under a valid Idempotency-Key is replayed on retry: that row is the point.
      if (options.headers && 'idempotency-key' in options.headers) delete after.idempotency_keys, delete before.idempotency_keys;
      expect(after, label).toEqual(before);
    }
    expect(refused).toBeGreaterThan(cases.length / 2);
  }, 300_000);
});
