import type { FastifyInstance } from 'fastify';
import { describe, expect, it } from 'vitest';
import { backends } from '../support/databases.js';
import { eventually } from '../support/eventually.js';
import { runReplay } from '../../packages/rastro/src/processing/replay-runner.js';
import { opsApp, seedTips, TIPS_POLICY } from '../support/ops-fixture.js';

const post = (app: FastifyInstance, url: string, body: unknown, headers: Record<string, string> = {}) =>
  app.inject({ method: 'POST', url, payload: JSON.stringify(body), headers: { 'content-type': 'application/json', ...headers } });

describe.each(backends())('operations API on $name', (backend) => {
  it('reports figures that match the database', async () => {
    const ops = await opsApp(backend);
    await seedTips(ops.store, ops.world);
    const q = async (sql: string) => (await ops.db.query<{ n: number }>(sql.replaceAll('S.', `"${ops.schema}".`))).rows[0]!.n;
    const res = await ops.app.inject({ url: '/ops/figures' });
    expect(res.statusCode).toBe(200);
    const figures = res.json();
    expect(figures.effects).toEqual({
      reserved: 0,
      done: await q(`select count(*)::int as n from S.effects where state = 'done'`),
      uncertain: await q(`select count(*)::int as n from S.effects where state = 'uncertain'`),
      failed: 0,
      'needs-review': 0,
    });
    expect(figures.effects).toMatchObject({ done: 3, uncertain: 1 });
    expect(figures.parked).toMatchObject({ events: 1, messages: 0, eventsByProcessor: { tips: 1 } });
    // The review queue's figures count what its lists hold.
    const waiting = (await ops.app.inject({ url: '/ops/effects?queue=review' })).json().effects;
    expect(figures.review).toEqual({ charges: 0, effects: waiting.length });
    expect(waiting).toHaveLength(1);
    expect(new Date(waiting[0].stateSince).getTime()).toBeLessThanOrEqual(new Date(waiting[0].updatedAt).getTime());
    expect(figures.processors).toEqual([{ processor: 'tips', runId: 'live:tips', eventsBehind: 0, secondsBehind: null }]);
    expect(figures.normalizer).toEqual({ eventsBehind: 0, secondsBehind: null });
    // One snapshot the normalizer has not seen.
    await ops.orders.intake.record('pied', 'webhook', { orderId: 42, status: 'received', lastUpdate: '2026-10-14T10:00:00Z' });
    const normalizer = (await ops.app.inject({ url: '/ops/normalizer' })).json();
    expect(normalizer.eventsBehind).toBe(1);
    expect(normalizer.secondsBehind).toBeGreaterThanOrEqual(0);
    expect(figures.readers.heldBack).toBe(0);
    // No charges: every status at 0, and the configured deadline (serve's default, 2 min).
    expect(figures.charges).toEqual({ byStatus: { PENDING: 0, CAPTURED: 0, FAILED: 0, NEEDS_REVIEW: 0 }, stalePending: { count: 0, oldestSeconds: null, deadlineSeconds: 120 } });
    expect(figures.effectsNeedingReview).toEqual({ 'charge.capture': 0 });
    // One more event: the live run is one behind until it runs again.
    await ops.store.append('tip-6', [{ type: 'tip.paid', data: { cents: 600 } }]);
    const behind = (await ops.app.inject({ url: '/ops/figures' })).json();
    // tips handles tip.paid only: the snapshot is not its backlog.
    expect(behind.processors[0].eventsBehind).toBe(1);
    expect(behind.normalizer.eventsBehind).toBe(1);
    expect(behind.processors[0].secondsBehind).toBeGreaterThanOrEqual(0);
  });

  it('resolves an uncertain effect once, and refuses what is not uncertain or unknown', async () => {
    const ops = await opsApp(backend);
    await seedTips(ops.store, ops.world);
    const list = (await ops.app.inject({ url: '/ops/effects?state=uncertain' })).json();
    expect(list.counts).toMatchObject({ uncertain: 1, done: 3 });
    const key = list.effects[0].key as string;
    expect(list.effects[0].error).toBe('the notifier timed out');
    const url = `/ops/effects/${encodeURIComponent(key)}/resolve`;

    const bad = await post(ops.app, url, { as: 'maybe' });
    expect(bad.statusCode).toBe(400);
    expect(bad.json()).toMatchObject({ code: 'RASTRO_VALIDATION', field: 'as' });
    expect((await post(ops.app, url, {})).json()).toMatchObject({ status: 400, field: 'as' });
    expect((await post(ops.app, url, { as: 'done', extra: 1 })).json()).toMatchObject({ status: 400, field: 'extra' });
    expect((await post(ops.app, `/ops/effects/${encodeURIComponent('nope:notify')}/resolve`, { as: 'done' })).statusCode).toBe(404);
    const state = async () => (await ops.db.query<{ state: string }>(`select state from "${ops.schema}".effects where key = $1`, [key])).rows[0]?.state;
    expect(await state()).toBe('uncertain');

    const done = await post(ops.app, url, { as: 'done' });
    expect(done.statusCode).toBe(200);
    expect(done.json()).toEqual({ key, before: 'uncertain', after: 'done' });
    expect(await state()).toBe('done');
    const again = await post(ops.app, url, { as: 'retry' });
    expect(again.statusCode).toBe(409);
    expect(again.json()).toMatchObject({ code: 'RASTRO_EFFECT_STATE' });
    expect((await ops.app.inject({ url: '/ops/effects?state=sometimes' })).json()).toMatchObject({ status: 400, field: 'state' });
    expect((await ops.app.inject({ url: '/ops/effects?limit=0' })).json()).toMatchObject({ status: 400, field: 'limit' });
  });

  it('retries a parked event once the processor is fixed', async () => {
    const ops = await opsApp(backend);
    await seedTips(ops.store, ops.world);
    const parked = (await ops.app.inject({ url: '/ops/parked-events' })).json().parked;
    expect(parked).toHaveLength(1);
    expect(parked[0]).toMatchObject({ processor: 'tips', streamId: 'tip-5', reason: 'failed', error: 'Error: cannot handle this tip' });
    const url = `/ops/parked-events/${parked[0].eventId}/retry`;
    expect((await post(ops.app, `/ops/parked-events/not-a-uuid/retry`, {})).json()).toMatchObject({ status: 400, field: 'eventId' });
    expect((await post(ops.app, `/ops/parked-events/00000000-0000-4000-8000-000000000000/skip`, {})).statusCode).toBe(404);

    const failing = await post(ops.app, url, {});
    expect(failing.json()).toEqual({ action: 'retry', runId: 'live:tips', handled: 0, stillParked: 1, alreadyDone: [] });
    ops.world.fixed = true;
    expect((await post(ops.app, url, {})).json()).toEqual({ action: 'retry', runId: 'live:tips', handled: 1, stillParked: 0, alreadyDone: [] });
    expect((await ops.app.inject({ url: '/ops/parked-events' })).json().parked).toEqual([]);
    const row = await ops.db.query<{ doc: { cents: number } }>(`select doc from "${ops.schema}".projections where projection = 'tip' and key = 'tip-5'`);
    expect(row.rows[0]?.doc).toEqual({ cents: 500 });
  });

  it('acts on the parked entry of the run it names, and refuses an event parked in several runs without one', async () => {
    const ops = await opsApp(backend);
    await seedTips(ops.store, ops.world);
    // A real replay parks tip-5 again: the event has one entry per run.
    await runReplay(ops.world.processor, { store: ops.store, runId: 'tips-again', policy: TIPS_POLICY });
    const list = (await ops.app.inject({ url: '/ops/parked-events' })).json().parked as { runId: string; eventId: string }[];
    expect(list.map((p) => p.runId).sort()).toEqual(['live:tips', 'tips-again']);
    const eventId = list[0]!.eventId;
    expect(list[1]!.eventId).toBe(eventId);
    const rows = async () => (await ops.db.query<{ run_id: string }>(`select run_id from "${ops.schema}".parked_events order by run_id`)).rows.map((r) => r.run_id);

    const ambiguous = await post(ops.app, `/ops/parked-events/${eventId}/skip`, {});
    expect(ambiguous.statusCode).toBe(409);
    expect(ambiguous.json()).toMatchObject({ code: 'RASTRO_PARKED_EVENT_AMBIGUOUS', runs: ['live:tips', 'tips-again'] });
    expect(await rows()).toEqual(['live:tips', 'tips-again']);

    // The same call three times acts on the same entry: once, then there is nothing left to act on.
    const url = `/ops/parked-events/${encodeURIComponent('tips-again')}/${eventId}/skip`;
    expect((await post(ops.app, url, {})).json()).toEqual({ action: 'skip', runId: 'tips-again', handled: 0, stillParked: 0, alreadyDone: [] });
    for (let i = 0; i < 2; i++) expect((await post(ops.app, url, {})).json()).toMatchObject({ status: 404, code: 'RASTRO_NOT_FOUND' });
    expect(await rows()).toEqual(['live:tips']);
    expect((await post(ops.app, `/ops/parked-events/bad%20run/${eventId}/retry`, {})).json()).toMatchObject({ status: 400, field: 'runId' });

    // Parked in one run only, the event id alone names it.
    ops.world.fixed = true;
    expect((await post(ops.app, `/ops/parked-events/${eventId}/retry`, {})).json()).toEqual({ action: 'retry', runId: 'live:tips', handled: 1, stillParked: 0, alreadyDone: [] });
    expect(await rows()).toEqual([]);
  });

  it('starts a simulate replay, reports its progress and pages its diff', async () => {
    const ops = await opsApp(backend);
    await seedTips(ops.store, ops.world);
    ops.world.multiplier = 2;
    const started = await post(ops.app, '/ops/replays', { processor: 'tips', runId: 'double-tips', simulate: true, policy: { notify: { mode: 'apply', onFailure: 'keep' } } });
    expect(started.statusCode).toBe(202);
    expect(started.headers.location).toBe('/ops/runs/double-tips');
    const run = await eventually(async () => {
      const body = (await ops.app.inject({ url: '/ops/runs/double-tips' })).json();
      return body.status === 'completed' && body.job?.state === 'completed' && body;
    }, 'the replay to complete');
    expect(run).toMatchObject({ mode: 'replay', simulate: true, total: 5, progress: 1, job: { state: 'completed', error: null } });
    expect(run.counters.events).toBe(5);

    const diff = (await ops.app.inject({ url: '/ops/runs/double-tips/diff?limit=2' })).json();
    // tip-5 still fails: the replay parks it too, and would change the other four.
    expect(diff).toMatchObject({ matching: 4, offset: 0, limit: 2, totals: [{ projection: 'tip', added: 0, changed: 4 }] });
    expect(diff.rows).toEqual([
      { projection: 'tip', key: 'tip-1', before: { cents: 100 }, after: { cents: 200 } },
      { projection: 'tip', key: 'tip-2', before: { cents: 200 }, after: { cents: 400 } },
    ]);
    const filtered = (await ops.app.inject({ url: '/ops/runs/double-tips/diff?key=p-4' })).json();
    expect(filtered).toMatchObject({ matching: 1, rows: [{ projection: 'tip', key: 'tip-4', before: { cents: 400 }, after: { cents: 800 } }] });
    expect((await ops.app.inject({ url: '/ops/runs/double-tips/diff?offset=10' })).json()).toMatchObject({ matching: 4, rows: [] });
    expect((await ops.app.inject({ url: '/ops/runs/double-tips/diff?projection=other' })).json()).toMatchObject({ matching: 0, rows: [] });
    const csv = await ops.app.inject({ url: '/ops/runs/double-tips/diff.csv?key=tip-1' });
    expect(csv.headers['content-type']).toMatch(/^text\/csv/);
    expect(csv.body).toBe('projection,key,before,after\r\ntip,tip-1,"{""cents"":100}","{""cents"":200}"');
    // Simulate wrote nothing.
    const row = await ops.db.query<{ doc: { cents: number } }>(`select doc from "${ops.schema}".projections where key = 'tip-1'`);
    expect(row.rows[0]?.doc).toEqual({ cents: 100 });

    const runs = (await ops.app.inject({ url: '/ops/runs' })).json().runs.map((r: { runId: string }) => r.runId);
    expect(runs.sort()).toEqual(['double-tips', 'live:tips']);

    // Its failure is in its own record, beside the diff; the review queue and the figures hold the live run's only.
    expect(diff.failures).toMatchObject({ total: 1, rows: [{ streamId: 'tip-5', reason: 'failed', error: 'Error: cannot handle this tip' }] });
    expect((await ops.app.inject({ url: '/ops/parked-events' })).json().parked.map((p: { runId: string }) => p.runId)).toEqual(['live:tips']);
    expect((await ops.app.inject({ url: '/ops/figures' })).json().parked).toMatchObject({ events: 1, eventsByProcessor: { tips: 1 } });
    expect((await ops.app.inject({ url: '/metrics' })).body).toMatch(/^rastro_parked_events 1$/m);
    expect((await post(ops.app, '/ops/replays', { processor: 'tips', runId: 'double-tips', simulate: true })).statusCode).toBe(409);
  });

  it('counts the keys a diff would add, stored as JSON null before, as new: totals match the rows', async () => {
    const ops = await opsApp(backend);
    await seedTips(ops.store, ops.world);
    // Two tips the live run never handled: the simulate run would add their keys.
    await ops.store.append('tip-6', [{ type: 'tip.paid', data: { cents: 600 } }]);
    await ops.store.append('tip-7', [{ type: 'tip.paid', data: { cents: 700 } }]);
    ops.world.multiplier = 2;
    await runReplay(ops.world.processor, { store: ops.store, runId: 'with-new', simulate: true, policy: TIPS_POLICY });
    const diff = (await ops.app.inject({ url: '/ops/runs/with-new/diff?limit=100' })).json();
    const rows = diff.rows as { before: unknown }[];
    expect(rows).toHaveLength(6);
    const added = rows.filter((row) => row.before === null).length;
    expect(added).toBe(2);
    expect(diff.totals).toEqual([{ projection: 'tip', added, changed: rows.length - added }]);
  });

  it('answers bad replay requests with 400, unknown runs with 404, and no processors with 409', async () => {
    const ops = await opsApp(backend);
    const expectField = async (body: unknown, field: string) => {
      const res = await post(ops.app, '/ops/replays', body);
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
      expect(res.json()).toMatchObject({ type: 'about:blank', status: 400, field });
    };
    await expectField({ simulate: true }, 'processor');
    await expectField({ processor: 'tips' }, 'simulate');
    await expectField({ processor: 'tips', simulate: 'yes' }, 'simulate');
    await expectField({ processor: 'nope', simulate: true }, 'processor');
    await expectField({ processor: 'tips', simulate: true, from: 'yesterday' }, 'from');
    await expectField({ processor: 'tips', simulate: true, from: '2026-10-15T00:00:00Z', to: '2026-10-14T00:00:00Z' }, 'to');
    await expectField({ processor: 'tips', simulate: true, runId: 'live:tips' }, 'runId');
    await expectField({ processor: 'tips', simulate: true, yieldToLive: 'no' }, 'yieldToLive');
    await expectField({ processor: 'tips', simulate: false, policy: { notify: { mode: 'always' } } }, 'policy.notify.mode');
    expect((await ops.app.inject({ method: 'POST', url: '/ops/replays', payload: 'x', headers: { 'content-type': 'text/plain' } })).statusCode).toBe(415);
    expect((await ops.app.inject({ url: '/ops/runs/nope' })).statusCode).toBe(404);
    expect((await ops.app.inject({ url: '/ops/runs/nope/diff' })).json()).toMatchObject({ status: 404, code: 'RASTRO_NOT_FOUND' });
    expect((await ops.app.inject({ url: '/ops/runs/bad%20id' })).json()).toMatchObject({ status: 400, field: 'runId' });
    expect((await ops.app.inject({ url: '/ops/runs?mode=sideways' })).json()).toMatchObject({ status: 400, field: 'mode' });
    expect((await ops.app.inject({ url: '/ops/figures/timeline?minutes=61' })).json()).toMatchObject({ status: 400, field: 'minutes' });
    expect(await ops.db.query(`select 1 from "${ops.schema}".processor_runs`)).toMatchObject({ rows: [] });

    // Two requests for one new run id at once: one starts it, the other is refused.
    const both = await Promise.all([1, 2].map(() => post(ops.app, '/ops/replays', { processor: 'tips', runId: 'once', simulate: true })));
    expect(both.map((res) => res.statusCode).sort()).toEqual([202, 409]);
    await eventually(async () => (await ops.app.inject({ url: '/ops/runs/once' })).json().status === 'completed', 'the run to complete');

    const bare = await opsApp(backend, { processors: false });
    const res = await post(bare.app, '/ops/replays', { processor: 'tips', simulate: true });
    expect(res.statusCode).toBe(409);
    expect(res.json().detail).toMatch(/started without processors/);
  });

  it('lists the outbox relays and refuses unknown parked messages', async () => {
    const ops = await opsApp(backend);
    expect((await ops.app.inject({ url: '/ops/outbox' })).json()).toEqual({ relays: [] });
    expect((await ops.app.inject({ url: '/ops/outbox/parked' })).json()).toEqual({ parked: [] });
    expect((await post(ops.app, '/ops/outbox/parked/00000000-0000-4000-8000-000000000000/retry', {})).statusCode).toBe(404);
    expect((await post(ops.app, '/ops/outbox/parked/x/skip', {})).json()).toMatchObject({ status: 400, field: 'messageId' });
    expect((await post(ops.app, '/ops/outbox/parked/00000000-0000-4000-8000-000000000000/retry', { please: true })).json()).toMatchObject({ status: 400, field: 'please' });
  });

  it('needs the key for /ops and /metrics but serves the console without it', async () => {
    const ops = await opsApp(backend, { apiKey: 'secret-key' });
    expect((await ops.app.inject({ url: '/ops/figures' })).statusCode).toBe(401);
    expect((await ops.app.inject({ url: '/metrics' })).statusCode).toBe(401);
    expect((await ops.app.inject({ url: '/ops/figures', headers: { authorization: 'Bearer secret-key' } })).statusCode).toBe(200);
    const page = await ops.app.inject({ url: '/console/' });
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toMatch(/^text\/html/);
    expect((await ops.app.inject({ url: '/console/..%2Fpackage.json' })).statusCode).toBe(404);
  });
});
