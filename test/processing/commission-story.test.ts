import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCommissionStory, type StoryReport } from '../../src/demo/commission-story.js';
import { DATABASE_URL, schemaName } from '../support/databases.js';

function assertStory(report: StoryReport): void {
  // The live consumer was killed midway: some notifications went out, not all.
  expect(report.sentBeforeKill).toBeGreaterThanOrEqual(report.orders / 2);
  expect(report.sentBeforeKill).toBeLessThan(report.orders);
  // Simulate: every version-1 commission differs (buggy or missing → fixed), nothing else.
  expect(report.simulated.diff).toHaveLength(report.orders);
  for (const row of report.simulated.diff) {
    expect(row.after).toEqual({ orderId: row.key, commissionCents: report.expected.get(row.key)!.version === 1 ? report.expected.get(row.key)!.commissionCents : expect.any(Number) });
    if (row.before !== null) expect((row.before as { commissionCents: number }).commissionCents).toBeLessThan((row.after as { commissionCents: number }).commissionCents);
  }
  // Every notification that was missing is would-apply; the rest were recorded.
  expect((report.simulated.counters['would-apply'] ?? 0) + (report.simulated.counters['already-recorded'] ?? 0)).toBe(report.orders);
  expect(report.simulated.counters['would-apply'] ?? 0).toBeGreaterThan(0);

  // The replay fixed every version-1 commission and never overwrote a version 2.
  expect(report.commissions).toEqual(report.expected);
  // Each notification was sent once, never twice, and none is missing after review.
  for (const id of report.eventIds) expect(report.sentPerKey.get(`${id}:notify-seller`)).toBe(1);
  expect(report.uncertainLeft).toBe(0);
  if (report.reconciled) {
    // Asked instead of reviewed: the provider's answers settled every uncertain notification.
    expect(report.reviewed).toEqual([]);
    expect(report.reconciled.happened + report.reconciled.released).toBeGreaterThanOrEqual(1);
    expect(report.reconciled.review + report.reconciled.failed).toBe(0);
  } else {
    // The provider failing after sending put at least that effect in the review queue.
    expect(report.reviewed.length).toBeGreaterThanOrEqual(1);
  }
}

describe('the commission story (seed 000)', () => {
  it('on the embedded database: kill, simulate, replay beside live, review', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'rastro-story-'));
    assertStory(await runCommissionStory({ url: dir, schema: 'rastro', orders: 32 }));
  }, 120_000);

  it.skipIf(!DATABASE_URL)('on real PostgreSQL: kill, simulate, replay beside live, review', async () => {
    assertStory(await runCommissionStory({ url: DATABASE_URL!, schema: schemaName(), orders: 48 }));
  }, 120_000);

  it.skipIf(!DATABASE_URL)('with a provider that can be asked, the uncertain notifications resolve themselves', async () => {
    const report = await runCommissionStory({ url: DATABASE_URL!, schema: schemaName(), orders: 48, askProvider: true });
    assertStory(report);
    // The kill left uncertain notifications; the provider had received some of them.
    expect(report.reconciled!.asked).toBeGreaterThanOrEqual(1);
  }, 120_000);

  it('with a provider that can be asked, on the embedded database', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'rastro-story-'));
    assertStory(await runCommissionStory({ url: dir, schema: 'rastro', orders: 32, askProvider: true }));
  }, 120_000);
});
