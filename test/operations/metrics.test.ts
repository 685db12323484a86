import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { backends } from '../support/databases.js';
import { chargeApp, chargesInEveryStatus } from '../support/charges.js';
import { opsApp, seedTips } from '../support/ops-fixture.js';

const parsePrometheus = createRequire(import.meta.url)('parse-prometheus-text-format') as (text: string) => {
  name: string;
  help: string;
  type: string;
  metrics: { value?: string; labels?: Record<string, string>; buckets?: Record<string, string>; count?: string }[];
}[];

type Family = ReturnType<typeof parsePrometheus>[number];

/** The value of a gauge's sample with these labels (the gauge must exist). */
function gaugeValue(families: Map<string, Family>, name: string, labels: Record<string, string> = {}): number {
  const family = families.get(name);
  expect(family, name).toBeDefined();
  expect(family!.type, name).toBe('GAUGE');
  const sample = family!.metrics.find((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v));
  expect(sample, `${name}${JSON.stringify(labels)}`).toBeDefined();
  return Number(sample!.value);
}

describe.each(backends())('/metrics on $name', (backend) => {
  it('exposes the figures, request durations and process metrics in the Prometheus text format', async () => {
    const ops = await opsApp(backend);
    await seedTips(ops.store, ops.world);
    expect((await ops.app.inject({ url: '/accounts/nope/balance' })).statusCode).toBe(404);
    const res = await ops.app.inject({ url: '/metrics' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
    const families = new Map(parsePrometheus(res.body).map((family) => [family.name, family]));
    const value = (name: string, labels: Record<string, string> = {}) => gaugeValue(families, name, labels);
    const count = async (sql: string) => (await ops.db.query<{ n: number }>(sql.replaceAll('S.', `"${ops.schema}".`))).rows[0]!.n;

    for (const state of ['reserved', 'done', 'uncertain', 'failed', 'needs-review']) {
      expect(value('rastro_effects', { state }), state).toBe(await count(`select count(*)::int as n from S.effects where state = '${state}'`));
    }
    expect(value('rastro_parked_events')).toBe(await count('select count(*)::int as n from S.parked_events'));
    expect(value('rastro_parked_events')).toBe(1);
    expect(value('rastro_parked_outbox_messages')).toBe(0);
    expect(value('rastro_processor_lag_events', { processor: 'tips' })).toBe(0);
    expect(value('rastro_normalizer_lag_events')).toBe(0);
    expect(value('rastro_reader_held_back_events')).toBe(0);
    expect(value('rastro_oldest_open_transaction_seconds')).toBeGreaterThanOrEqual(0);
    // No charges yet: every status and the charge capture's review count are there, at 0.
    for (const status of ['PENDING', 'CAPTURED', 'FAILED', 'NEEDS_REVIEW']) expect(value('rastro_charges', { status }), status).toBe(0);
    expect(value('rastro_charges_stale_pending')).toBe(0);
    expect(value('rastro_charges_stale_pending_oldest_seconds')).toBe(0);
    expect(value('rastro_effects_needs_review', { effect_type: 'charge.capture' })).toBe(0);

    const http = families.get('rastro_http_request_duration_seconds')!;
    expect(http.type).toBe('HISTOGRAM');
    expect(http.metrics.length).toBeGreaterThan(0);
    // The parser drops a histogram's labels when `le` comes first, as prom-client writes it: the
    // labelled count is checked on its line.
    expect(res.body).toContain('rastro_http_request_duration_seconds_count{method="GET",route="/accounts/:id/balance",status_code="404"} 1\n');
    expect(families.get('rastro_process_cpu_seconds_total')?.type).toBe('COUNTER');
    expect(families.get('rastro_process_resident_memory_bytes')?.type).toBe('GAUGE');
    for (const name of families.keys()) expect(name).toMatch(/^rastro_/);

    // Read at each scrape: a new event puts the processor one behind.
    await ops.store.append('tip-7', [{ type: 'tip.paid', data: { cents: 700 } }]);
    const again = new Map(parsePrometheus((await ops.app.inject({ url: '/metrics' })).body).map((family) => [family.name, family]));
    expect(again.get('rastro_processor_lag_events')!.metrics[0]).toMatchObject({ labels: { processor: 'tips' }, value: '1' });
  });

  it('exposes charges by status, stale PENDING charges and effects in review, as the database has them', async () => {
    const t = await chargeApp(backend, { reviewAfterMs: 2_500, backoff: { initialMs: 100, maxMs: 400 } });
    const { pending } = await chargesInEveryStatus(t.services.store, t.charges, t.acquirer);
    const res = await t.app.inject({ url: '/metrics' });
    expect(res.statusCode).toBe(200);
    const families = new Map(parsePrometheus(res.body).map((family) => [family.name, family]));
    const count = async (sql: string) => (await t.services.db.query<{ n: number }>(sql.replaceAll('S.', `"${t.schema}".`))).rows[0]!.n;
    const states = { PENDING: `'reserved', 'uncertain'`, CAPTURED: `'done'`, FAILED: `'failed'`, NEEDS_REVIEW: `'needs-review'` };
    for (const [status, list] of Object.entries(states)) {
      expect(gaugeValue(families, 'rastro_charges', { status }), status).toBe(await count(`select count(*)::int as n from S.effects where effect_type = 'charge.capture' and state in (${list})`));
      expect(gaugeValue(families, 'rastro_charges', { status }), status).toBe(1);
    }
    expect(gaugeValue(families, 'rastro_charges_stale_pending')).toBe(1);
    const age = await count(`select extract(epoch from now() - reserved_at)::float8 as n from S.effects where key = 'charge:${pending.id}'`);
    const oldest = gaugeValue(families, 'rastro_charges_stale_pending_oldest_seconds');
    expect(oldest).toBeGreaterThanOrEqual(1.2);
    expect(oldest).toBeLessThanOrEqual(age);
    expect(gaugeValue(families, 'rastro_effects_needs_review', { effect_type: 'charge.capture' })).toBe(1);
    expect(gaugeValue(families, 'rastro_effects', { state: 'needs-review' })).toBe(1);
    expect(families.get('rastro_charges')!.help).toMatch(/status/);

    // Settled by a person: the next scrape has nothing in review or stale.
    await t.app.inject({ method: 'POST', url: `/ops/effects/${encodeURIComponent(`charge:${pending.id}`)}/resolve`, payload: { as: 'failed' } });
    const again = new Map(parsePrometheus((await t.app.inject({ url: '/metrics' })).body).map((family) => [family.name, family]));
    expect(gaugeValue(again, 'rastro_charges_stale_pending')).toBe(0);
    expect(gaugeValue(again, 'rastro_charges_stale_pending_oldest_seconds')).toBe(0);
    expect(gaugeValue(again, 'rastro_charges', { status: 'FAILED' })).toBe(2);
  });
});
