import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { runLiveRound } from '../../packages/rastro/src/processing/live-round.js';
import { backends } from '../support/databases.js';
import { auditWorld, brief, type AuditWorld } from '../support/audit-world.js';
import { TIPS_POLICY, tipsWorld } from '../support/ops-fixture.js';
import { eventually } from '../support/eventually.js';

/**
 * One defect per case, made directly in the database as a corruption would make it; the audit
 * after it finds exactly that defect, incrementally as fully.
 */
interface Damage {
  name: string;
  /**
   * Makes the defect; returns the findings expected, as `brief` writes them: `full:` marks one
   * only a full audit makes, and the trail's count of deletes and updates is an incremental one's.
   */
  damage(world: AuditWorld): Promise<string[]>;
  /** Whether an incremental audit can see it (a deleted row leaves nothing to find but by a full one). */
  incremental?: false;
}

const one = async <Row>(world: AuditWorld, text: string, values?: unknown[]) => (await world.sql<Row>(text, values))[0]!;
/**
 * Waits until the statistics count the damage's update or delete of the events table: a server
 * backend reports them within a second of going idle (PGlite's the verifier flushes itself).
 */
const counted = async (world: AuditWorld) => {
  if (world.store.db.kind === 'pglite') return;
  await eventually(async () => {
    const { n } = await one<{ n: number }>(world, `select coalesce(sum(n_tup_upd + n_tup_del), 0)::int as n from pg_stat_user_tables where schemaname = $1 and relname = 'events'`, [world.schema]);
    return n > 0;
  }, 'the statistics to count the damage');
};

const noteStream = async (world: AuditWorld) => {
  await world.store.append('note-1', [1, 2, 3].map((n) => ({ type: 'note.added', data: { n } })), { expectedVersion: 'no-stream' });
};

const damages: Damage[] = [
  {
    name: 'an immutability trigger disabled',
    async damage(world) {
      await world.sql('alter table {s}.events disable trigger events_immutable_rows');
      return ['log/trigger-disabled/trigger:events_immutable_rows'];
    },
  },
  {
    name: 'an event deleted with the trigger disabled, then enabled again',
    async damage(world) {
      await world.sql('alter table {s}.events disable trigger events_immutable_rows');
      await world.sql(`delete from {s}.events where stream_id = 'note-1' and stream_version = 2`);
      await world.sql('alter table {s}.events enable always trigger events_immutable_rows');
      await counted(world);
      return ['log/version-gap/stream:note-1', 'trail/event-missing/stream:note-1', 'trail/rows-deleted-or-updated/trigger:{schema}.events'];
    },
  },
  {
    name: "a stream's row raised to a version its events do not reach",
    async damage(world) {
      await world.sql(`update {s}.streams set version = version + 1 where stream_id = 'note-1'`);
      return ['full:log/version-gap/stream:note-1', 'trail/stream-row-altered/stream:note-1'];
    },
  },
  {
    name: 'an event edited behind the trigger, that nothing folds',
    async damage(world) {
      await world.sql('alter table {s}.events disable trigger events_immutable_rows');
      const { id } = await one<{ id: string }>(world, `update {s}.events set data = '{"n": 20}' where stream_id = 'note-1' and stream_version = 2 returning id::text`);
      await world.sql('alter table {s}.events enable always trigger events_immutable_rows');
      await counted(world);
      return [`trail/event-altered/event:${id}`, 'trail/rows-deleted-or-updated/trigger:{schema}.events'];
    },
  },
  {
    name: "an event deleted while the trigger's function let it through, then restored",
    async damage(world) {
      await world.sql(`create or replace function {s}.refuse_event_change() returns trigger language plpgsql as $$ begin return old; end $$`);
      await world.sql(`delete from {s}.events where stream_id = 'note-1' and stream_version = 2`);
      await world.sql(`create or replace function {s}.refuse_event_change() returns trigger language plpgsql as $$
        begin raise exception 'events are immutable: % on %.% is refused', tg_op, tg_table_schema, tg_table_name using errcode = 'restrict_violation'; end $$`);
      await counted(world);
      // The triggers' rows did not change: only the chain sees it without --full.
      return ['full:log/version-gap/stream:note-1', 'trail/event-missing/stream:note-1', 'trail/rows-deleted-or-updated/trigger:{schema}.events'];
    },
  },
  {
    name: "a processor's checkpoint moved back",
    async damage(world) {
      await world.sql(`update {s}.processor_checkpoints set tx_order = 0, position = 0 where run_id = 'live:tips'`);
      return ['processors/checkpoint-moved-back/run:live:tips'];
    },
  },
  {
    name: "a processor's checkpoint past the log's head",
    async damage(world) {
      await world.sql(`update {s}.processor_checkpoints set tx_order = tx_order + 1000000 where run_id = 'live:tips' and partition = 0`);
      return ['processors/checkpoint-past-head/run:live:tips'];
    },
  },
  {
    name: 'a reservation left by a dead owner',
    async damage(world) {
      const { id } = await one<{ id: string }>(world, `select id from {s}.events where stream_id = 'tip-1'`);
      await world.sql(`insert into {s}.effects (key, event_id, effect_type, state, run_id, on_failure, owner_token) values ($1, $2, 'ping', 'reserved', 'live:tips', 'keep', 987654)`, [`${id}:ping`, id]);
      return [`effects/abandoned-reservation/effect:${id}:ping`];
    },
  },
  {
    name: "an event's ledger outcome removed",
    async damage(world) {
      const { key } = await one<{ key: string }>(world, `update {s}.effects set result = null where key = (select min(key) from {s}.effects where effect_type = 'notify') returning key`);
      return [`effects/outcome-missing/effect:${key}`];
    },
  },
  {
    name: 'a ledger entry whose event is missing',
    async damage(world) {
      const id = randomUUID();
      await world.sql(`insert into {s}.effects (key, event_id, effect_type, state, run_id, on_failure, owner_token, result) values ($1, $2, 'notify', 'done', 'live:tips', 'keep', 1, '{}')`, [`${id}:notify`, id]);
      return [`effects/event-missing/effect:${id}:notify`];
    },
  },
  {
    name: "a relay's checkpoint moved back",
    async damage(world) {
      const { partition } = await one<{ partition: number }>(world, `update {s}.processor_checkpoints set tx_order = 0, position = 0
        where run_id = 'relay:outbox' and partition = (select min(partition) from {s}.processor_checkpoints where run_id = 'relay:outbox' and position > 0) returning partition`);
      expect(partition).toBeGreaterThanOrEqual(0);
      return ['outbox/checkpoint-moved-back/relay:relay:outbox'];
    },
  },
  {
    name: 'a ChargeCaptured dropped',
    incremental: false,
    async damage(world) {
      await world.sql(`delete from {s}.outbox where type = 'ChargeCaptured' and aggregate_id = $1`, [world.ids.capturedCharge]);
      return [`charges/trail-broken/charge:${world.ids.capturedCharge}`];
    },
  },
  {
    name: 'a charge row deleted, its ledger entry left',
    incremental: false,
    async damage(world) {
      await world.sql(`delete from {s}.charges where id = $1`, [world.ids.capturedCharge]);
      return [`charges/charge-missing/effect:charge:${world.ids.capturedCharge}`];
    },
  },
  {
    name: "a captured charge's ledger entry rewritten to failed",
    async damage(world) {
      await world.sql(`update {s}.effects set state = 'failed' where key = $1`, [`charge:${world.ids.capturedCharge}`]);
      return [`charges/trail-broken/charge:${world.ids.capturedCharge}`];
    },
  },
  {
    name: 'an order row tampered with',
    async damage(world) {
      await world.sql(`update {s}.projections set doc = jsonb_set(doc, '{status}', '"cancelled"') where projection = 'order' and key = $1`, [world.ids.order]);
      return [`orders/order-differs/order:${world.ids.order}`];
    },
  },
  {
    name: "an order's paidAt moved",
    async damage(world) {
      await world.sql(`update {s}.projections set doc = jsonb_set(doc, '{paidAt}', '"2026-09-09T00:00:00.000Z"') where projection = 'order' and key = $1`, [world.ids.order]);
      return [`orders/paid-at-moved/order:${world.ids.order}`];
    },
  },
  {
    name: 'an account snapshot tampered with',
    async damage(world) {
      await world.sql(`update {s}.snapshots set state = jsonb_set(state, '{balance}', '999999') where stream_id = $1`, [`account-${world.ids.account}`]);
      return [`accounts/snapshot-differs/account:${world.ids.account}`];
    },
  },
  {
    name: 'a dead letter in the inbox',
    async damage(world) {
      const { id } = await one<{ id: string }>(world, `insert into {s}.inbox_dead_letters (broker, source, reason, body) values ('nats', 'rastro.orders', 'not a rastro message', 'x') returning id::text`);
      return [`inbox/dead-letter/dead-letter:${id}`];
    },
  },
];

describe.each(backends())('each check finds its defect, and nothing else ($name)', (backend) => {
  it.each(damages)('$name', async ({ damage, incremental }) => {
    const world = await auditWorld(backend);
    await noteStream(world);
    expect(brief(await world.audit())).toEqual([]);
    const expected = (await damage(world)).map((finding) => finding.replace('{schema}', world.schema));
    const cue = (finding: string) => finding.startsWith('trail/rows-deleted-or-updated');
    const full = expected.filter((finding) => !cue(finding)).map((finding) => finding.replace(/^full:/, '')).sort();
    const since = expected.filter((finding) => !finding.startsWith('full:')).sort();
    // A full audit checks everything: the statistics' count of deletes and updates is only the incremental one's cue.
    expect(brief(await world.audit({ full: true, record: false }))).toEqual(full);
    expect(brief(await world.audit())).toEqual(incremental === false ? [] : since);
  });

  it('reports a live run standing still while an event waits for it, with its lag', async () => {
    const world = await auditWorld(backend);
    await world.store.append('tip-9', [{ type: 'tip.paid', data: { cents: 900 } }]);
    expect(brief(await world.audit())).toEqual([]);
    const stopped = await world.audit();
    expect(brief(stopped)).toEqual(['processors/silent-stop/run:live:tips']);
    expect(stopped.findings[0]!.detail).toMatch(/1 events behind.*no runner is alive/);
    await runLiveRound(tipsWorld().processor, { store: world.store, policy: TIPS_POLICY, partitions: 2 });
    expect(brief(await world.audit())).toEqual([]);
  });

  it('takes an order snapshot the normalizer has not reached yet for lag, not a defect', async () => {
    const world = await auditWorld(backend);
    await world.orders.intake.record('pied', 'webhook', { orderId: '1', status: 'cancelled', lastUpdate: '2026-09-08T12:00:00.000Z' }, { capturedAt: new Date('2026-09-08T12:00:01Z') });
    expect(brief(await world.audit({ full: true }))).toEqual([]);
    await world.orders.normalizeRound();
    expect(brief(await world.audit())).toEqual([]);
  });

  it('lists a parked event with its age', async () => {
    const world = await auditWorld(backend);
    const tips = tipsWorld();
    await world.store.append('tip-8', [{ type: 'tip.paid', data: { cents: 1, bad: true } }]);
    await runLiveRound(tips.processor, { store: world.store, policy: TIPS_POLICY, partitions: 2 }).catch(() => undefined);
    const { id } = await one<{ id: string }>(world, `select event_id::text as id from {s}.parked_events`);
    const report = await world.audit();
    expect(brief(report)).toEqual([`processors/parked/event:${id}`]);
    expect(report.findings[0]!.ageSeconds).toBeGreaterThanOrEqual(0);
  });

  it('lists a PENDING charge past the deadline, with its age', async () => {
    const world = await auditWorld(backend);
    world.acquirer.faults.push('fail-before');
    const { charge } = await world.charges.start({ amountCents: 500, customerId: 'c-3' }, 'audit-key-3');
    expect(charge.status).toBe('PENDING');
    await world.sql(`update {s}.effects set reserved_at = now() - interval '2 minutes' where key = $1`, [`charge:${charge.id}`]);
    const report = await world.audit();
    expect(brief(report)).toEqual([`charges/stale-pending/charge:${charge.id}`]);
    expect(report.findings[0]!.ageSeconds).toBeGreaterThan(119);
  });

  it('asks the acquirer: CAPTURED here and unknown there, or captured there and FAILED here', async () => {
    const world = await auditWorld(backend);
    const options = { checks: ['providers'], askProviders: true, effectTypes: world.charges.effectTypes, providerPerSecond: 1000 };
    expect(brief(await world.audit({ ...options, full: true }))).toEqual([]);
    world.acquirer.captures.delete('audit-key-1');
    world.acquirer.captures.set('audit-key-2', { captureId: 'cap-x', key: 'audit-key-2', amountCents: 2000, currency: 'BRL', customerId: 'c-2', voided: false } as never);
    expect(brief(await world.audit({ ...options, full: true }))).toEqual([
      `providers/provider-has-no-record/charge:${world.ids.capturedCharge}`,
      `providers/provider-says-happened/charge:${world.ids.failedCharge}`,
    ].sort());
  });
});
