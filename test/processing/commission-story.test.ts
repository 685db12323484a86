import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCommissionStory, type StoryReport } from '../../packages/server/src/demo/commission-story.js';
import { DATABASE_URL, schemaName } from '../support/databases.js';

/**
 * The story's figures are the same on every run, so they are asserted exactly: for n orders (a
 * multiple of 8), the notifier hangs after n/2, the killed consumer leaves its batch of 4
 * uncertain, every eighth order is revised, and n/5 new orders arrive during the replay.
 */
function assertStory(report: StoryReport, lines: string[]): void {
  const n = report.orders;
  const revised = n / 8;
  const newOrders = Math.floor(n / 5);
  expect(report.sentBeforeKill).toBe(n / 2);
  expect(report.writtenWrong).toBe(n / 2);
  expect(report.leftUncertain).toBe(4);
  // Simulate: every commission of the day changes (wrong → right, or missing → computed).
  expect(report.simulated.diff).toHaveLength(n);
  expect(report.simulated.diff.filter((row) => row.before !== null)).toHaveLength(n / 2);
  for (const row of report.simulated.diff) {
    expect(row.after).toEqual({ orderId: row.key, commissionCents: expect.any(Number) });
    if (row.before !== null) expect((row.before as { commissionCents: number }).commissionCents).toBeLessThan((row.after as { commissionCents: number }).commissionCents);
  }
  expect(report.simulated.counters).toMatchObject({ 'would-apply': n / 2 - 4, 'already-recorded': n / 2 + 4 });
  expect(lines).toContain(`   notifications: ${n / 2 - 4} would be sent, ${n / 2 + 4} are on record already and would not be sent again (${n / 2 - 4} + ${n / 2 + 4} = ${n})`);
  // The fixed live consumer: the rest of the day and the revisions; one delivery unconfirmed.
  expect(report.live).toEqual({ events: n / 2 + revised, sent: n / 2 - 4 + revised, uncertain: 1 });
  // The replay: the wrong commissions of orders not revised corrected, the revised ones left at version 2.
  const corrected = n / 2 - n / 16;
  expect(report.replay).toEqual({ corrected, alreadyRight: n - corrected - revised, newerVersion: revised, newOrdersMeanwhile: newOrders, sentByLiveMeanwhile: newOrders });
  expect(report.replayed).toMatchObject({ events: n, 'already-recorded': n, 'ignored-newer-version': revised });
  expect(report.replayed.applied ?? 0).toBe(0);
  expect(lines).toContain(`   ${corrected} commissions corrected, ${n - corrected - revised} already right, ${revised} left at their newer version 2 (${corrected} + ${n - corrected - revised} + ${revised} = ${n});`);
  // The 5 uncertain: 1 delivered, 4 never sent, then sent once by the second replay.
  expect(report.sentAfterSettling).toBe(4);
  if (report.reconciled) {
    expect(report.reviewed).toEqual([]);
    expect(report.reconciled).toMatchObject({ happened: 1, released: 4, review: 0, failed: 0 });
  } else {
    expect(report.reviewed.filter((r) => r.resolvedAs === 'done')).toHaveLength(1);
    expect(report.reviewed.filter((r) => r.resolvedAs === 'retry')).toHaveLength(4);
  }
  // Every commission right, every payment notified exactly once, and the sum on screen adds up.
  expect(report.commissions).toEqual(report.expected);
  expect(report.eventIds).toHaveLength(n + revised + newOrders);
  for (const id of report.eventIds) expect(report.sentPerKey.get(`${id}:notify-seller`)).toBe(1);
  expect(report.uncertainLeft).toBe(0);
  const total = n + revised + newOrders;
  expect(lines.at(-1)).toBe(`7. Result: ${n + newOrders} of ${n + newOrders} commissions right; ${total} payments, ${total} notifications (${n / 2} before the kill + ${n / 2 - 4 + revised + newOrders} by the live consumer + 4 by the second replay), 0 sent twice, 0 missing`);
}

async function tell(url: string, schema: string, orders: number, askProvider = false) {
  const lines: string[] = [];
  const report = await runCommissionStory({ url, schema, orders, askProvider, log: (line) => lines.push(line) });
  return { report, lines };
}

describe('the commission story (seed 000)', () => {
  it('on the embedded database: kill, simulate, replay beside live, review', async () => {
    const { report, lines } = await tell(join(await mkdtemp(join(tmpdir(), 'rastro-story-')), 'pg'), 'rastro', 32);
    assertStory(report, lines);
  }, 120_000);

  it('with a provider that can be asked, on the embedded database, told the same way twice', async () => {
    const first = await tell(join(await mkdtemp(join(tmpdir(), 'rastro-story-')), 'pg'), 'rastro', 32, true);
    assertStory(first.report, first.lines);
    const second = await tell(join(await mkdtemp(join(tmpdir(), 'rastro-story-')), 'pg'), 'rastro', 32, true);
    expect(second.lines).toEqual(first.lines);
  }, 180_000);

  it.skipIf(!DATABASE_URL)('on real PostgreSQL: kill, simulate, replay beside live, review', async () => {
    const { report, lines } = await tell(DATABASE_URL!, schemaName(), 48);
    assertStory(report, lines);
  }, 120_000);

  it.skipIf(!DATABASE_URL)('with a provider that can be asked, the uncertain notifications resolve themselves', async () => {
    const { report, lines } = await tell(DATABASE_URL!, schemaName(), 48, true);
    assertStory(report, lines);
  }, 120_000);
});
