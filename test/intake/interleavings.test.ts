import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ORDER_STATUSES } from '../../packages/rastro/src/intake/order-snapshot.js';
import { backends } from '../support/databases.js';
import { ordersOn } from '../support/order-intake.js';

/** One snapshot of a history: its status, and when the provider says it happened (ms into the day). */
interface Step {
  status: (typeof ORDER_STATUSES)[number];
  ms: number;
}

const DAY = Date.parse('2026-09-08T00:00:00Z');
const webhookTime = (ms: number) => new Date(DAY + ms).toISOString();
/** The REST page's precision and offset: the whole second, at -03:00. */
const restTime = (ms: number) => new Date(DAY + ms - 3 * 3600_000).toISOString().slice(0, 19) + '-03:00';

/** Histories with one snapshot per second, so "the latest" is well defined. */
const history = fc
  .uniqueArray(fc.integer({ min: 0, max: 80_000 }), { minLength: 1, maxLength: 6 })
  .chain((seconds) =>
    fc.tuple(
      ...[...seconds].sort((a, b) => a - b).map((second) =>
        fc.record({ status: fc.constantFrom(...ORDER_STATUSES), ms: fc.integer({ min: 0, max: 999 }).map((ms) => second * 1000 + ms) }),
      ),
    ),
  );

/** Each snapshot delivered by webhook, REST or both, some more than once, all shuffled, with the import and rounds somewhere. */
const deliveries = (steps: Step[]) =>
  fc
    .tuple(
      fc.array(fc.tuple(fc.nat({ max: steps.length - 1 }), fc.constantFrom('webhook' as const, 'rest' as const)), { maxLength: 6 }),
      fc.array(fc.constantFrom('webhook' as const, 'rest' as const), { minLength: steps.length, maxLength: steps.length }),
    )
    .map(([extra, first]) => [...first.map((channel, index) => ({ index, channel })), ...extra.map(([index, channel]) => ({ index, channel }))])
    .chain((list) => fc.shuffledSubarray([...list, 'import' as const, 'round' as const, 'round' as const], { minLength: list.length + 3 }));

describe.each(backends())('random interleavings of a history on $name', (backend) => {
  it('end in the state the latest snapshot says, with at most one alert per order', async () => {
    const { orders, alerts, deliver } = await ordersOn(backend);
    let run = 0;
    const finals = new Map<string, unknown>();
    await fc.assert(
      fc.asyncProperty(history.chain((steps) => fc.tuple(fc.constant(steps), deliveries(steps))), async ([steps, plan]) => {
        const orderId = `p${run++}`;
        for (const item of plan) {
          if (item === 'round') await orders.normalizeRound();
          else if (item === 'import') await orders.intake.recordImport({ source: 'pied', orderId, outcome: 'confirmed' }).catch(() => undefined);
          else {
            const step = steps[item.index]!;
            const lastUpdate = item.channel === 'webhook' ? webhookTime(step.ms) : restTime(step.ms);
            await deliver(item.channel, { orderId, status: step.status, lastUpdate }, new Date().toISOString());
          }
        }
        await orders.normalizeRound();
        const { state } = await orders.get(`pied:${orderId}`);
        expect(state!.status).toBe(steps.at(-1)!.status);
        expect(Math.floor(Date.parse(state!.lastUpdate!) / 1000)).toBe(Math.floor((DAY + steps.at(-1)!.ms) / 1000));
        finals.set(orderId, state);
        const sent = alerts.filter((entry) => entry.alert.orderId === orderId);
        expect(sent.length).toBeLessThanOrEqual(1);
        if (sent.length === 1) expect(state!.cancelledAfterImportAt).toBe(sent[0]!.alert.cancelledAt);
        else expect(state!.cancelledAfterImportAt).toBeNull();
      }),
      { numRuns: 30 },
    );
    // A full reprocess of everything sends nothing new and changes no order's status.
    const sentBefore = alerts.length;
    await orders.reprocess();
    expect(alerts.length).toBe(sentBefore);
    for (const [orderId, state] of finals) expect((await orders.get(`pied:${orderId}`)).state).toEqual(state);
  });
});
