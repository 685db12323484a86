import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { acquirerClient } from '../../packages/rastro/src/charges/acquirer.js';
import { startAcquirerFake, type AcquirerFake } from '../../packages/rastro/src/charges/acquirer-fake.js';
import { createCharges, type Charge } from '../../packages/rastro/src/charges/charges.js';
import { startServer, type RunningServer } from '../../packages/server/src/server.js';
import { hasChromium, openBrowser, SCREENSHOTS } from '../support/browser.js';
import { chargesInEveryStatus } from '../support/charges.js';
import { DATABASE_URL, schemaName } from '../support/databases.js';

const API_KEY = 'console-charges-key';

if (!hasChromium) console.log('/usr/bin/chromium is missing: the console charges browser suite is skipped (apt-get install -y chromium).');

describe.skipIf(!hasChromium)('charges in the console, in headless Chromium', () => {
  let server: RunningServer;
  let acquirer: AcquirerFake;
  let browser: Awaited<ReturnType<typeof openBrowser>>;
  let seeded: Record<'captured' | 'failed' | 'review' | 'pending', Charge>;
  const query = async <T>(sql: string, values: unknown[] = []) => (await server.db.query<T>(sql.replaceAll('S.', `"${server.config.schema}".`), values)).rows;
  const stateOf = async (charge: Charge) => (await query<{ state: string }>('select state from S.effects where key = $1', [`charge:${charge.id}`]))[0]?.state;
  const messagesOf = async (charge: Charge) =>
    (await query<{ type: string }>(`select type from S.outbox where aggregate_type = 'charge' and aggregate_id = $1 order by position`, [charge.id])).map((row) => row.type);

  beforeAll(async () => {
    acquirer = await startAcquirerFake();
    // A one-second deadline, so the server counts the seeded PENDING charge as stale; reconciliation
    // is run by the seeding below with a short backoff, not by serve's loop.
    server = await startServer({
      port: 0, host: '127.0.0.1', logLevel: 'silent', apiKey: API_KEY, schema: schemaName(),
      acquirerUrl: acquirer.url, acquirerTimeoutMs: 500, chargeDeadlineSeconds: 1, chargeReviewAfterSeconds: 3, reconcileIntervalSeconds: 0,
      ...(DATABASE_URL ? { databaseUrl: DATABASE_URL } : { dataDir: 'memory://' }),
    });
    const charges = createCharges(server.store, { acquirer: acquirerClient(acquirer.url), timeoutMs: 500, deadlineMs: 1_200, reviewAfterMs: 2_500, backoff: { initialMs: 100, maxMs: 400 } });
    seeded = await chargesInEveryStatus(server.store, charges, acquirer);
    await server.figureHistory.sample();
    await new Promise((resolve) => setTimeout(resolve, 300));
    await server.figureHistory.sample();
    browser = await openBrowser();
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    const schema = server?.config.schema;
    if (DATABASE_URL && schema) await server.db.query(`drop schema if exists "${schema}" cascade`).catch(() => undefined);
    await server?.close();
    await acquirer?.close();
  });

  it('shows charges by status, stale PENDING charges and effects in review on the overview, with their charts', async () => {
    const { page } = browser;
    await page.goto(`${server.url}/console/`);
    const dialog = page.getByRole('dialog', { name: 'API key' });
    await dialog.getByLabel('API key').fill(API_KEY);
    await dialog.getByRole('button', { name: 'Use this key' }).click();
    const value = (figure: string) => page.locator(`[data-figure="${figure}"] .value`);
    await expect.poll(() => value('charges.NEEDS_REVIEW').textContent(), { timeout: 10_000 }).toBe('1');
    const [inReview] = await query<{ n: number }>(`select count(*)::int as n from S.effects where effect_type = 'charge.capture' and state = 'needs-review'`);
    expect(await value('charges.NEEDS_REVIEW').textContent()).toBe(String(inReview!.n));
    expect(await value('effects.needs-review').textContent()).toBe(String(inReview!.n));
    // Charges in review, one definition: NEEDS_REVIEW ones and the PENDING one whose capture is uncertain; the review page lists the same.
    const [queued] = await query<{ n: number }>(`select count(*)::int as n from S.effects where effect_type = 'charge.capture' and state in ('needs-review', 'uncertain')`);
    expect(await value('review.charges').textContent()).toBe(String(queued!.n));
    expect(queued!.n).toBe(2);
    expect(await value('review.effects').textContent()).toBe('0');
    expect(await page.locator('[data-figure="effects.needs-review"] .sub').textContent()).toBe('charge.capture: 1');
    for (const status of ['PENDING', 'CAPTURED', 'FAILED']) expect(await value(`charges.${status}`).textContent(), status).toBe('1');
    expect(await value('charges.stalePending').textContent()).toBe('1');
    expect(await page.locator('[data-figure="charges.stalePending"] .sub').textContent()).toMatch(/^past the 1\.0 s deadline, oldest \d+\.\d s$/);
    expect(await page.locator('[data-figure="charges.stalePending"]').getAttribute('class')).toContain('alert');

    for (const name of ['rastro_charges', 'rastro_charges_stale_pending', 'rastro_charges_stale_pending_oldest_seconds', 'rastro_effects_needs_review']) {
      await expect.poll(() => page.locator(`figure.chart[data-metric="${name}"]`).count(), { message: name }).toBe(1);
    }
    // One line per status.
    expect(await page.locator('figure.chart[data-metric="rastro_charges"] svg path').count()).toBe(4);
    expect(await page.locator('figure.chart[data-metric="rastro_charges_stale_pending"] .legend strong').textContent()).toBe('1');
    await page.screenshot({ path: join(SCREENSHOTS, 'overview-charges.png'), fullPage: true });
  });

  it('settles charges in review from the review queue, by mouse and by keyboard, and the database follows', async () => {
    const { page } = browser;
    await page.goto(`${server.url}/console/#/review`);
    const rows = page.locator('tr[data-charge]');
    await expect.poll(() => rows.count(), { timeout: 10_000 }).toBe(2);
    // Charge captures are settled here, not among the events' effects.
    expect(await page.locator('tr[data-effect]').count()).toBe(0);
    const review = page.locator(`tr[data-charge="${seeded.review.id}"]`);
    expect(await review.locator('td').allTextContents()).toEqual([
      seeded.review.id, '250.00 BRL', 'customer-review', 'seed-review', 'NEEDS_REVIEW', seeded.review.reason, expect.any(String), 'Confirm capturedConfirm not captured',
    ]);
    expect(seeded.review.reason).toMatch(/past the business deadline/);
    expect(await page.locator(`tr[data-charge="${seeded.pending.id}"] td`).nth(4).textContent()).toBe('PENDING');
    // A capture made on a request's path is never released for a blind retry.
    expect(await page.locator('section[aria-labelledby="charges-title"]').getByRole('button', { name: 'Release for retry' }).count()).toBe(0);
    expect(await page.locator('#charges-title').textContent()).toBe('Charges in review (2)');
    // "Since" is when the charge entered its status, with its age: a PENDING one since its creation.
    const created = (await query<{ created_at: Date }>('select created_at from S.charges where id = $1', [seeded.pending.id]))[0]!.created_at;
    expect(await page.locator(`tr[data-charge="${seeded.pending.id}"] time`).getAttribute('datetime')).toBe(created.toISOString());
    expect(await page.locator(`tr[data-charge="${seeded.pending.id}"] time`).textContent()).toMatch(/\(\d+ (s|min) ago\)$/);
    await page.screenshot({ path: join(SCREENSHOTS, 'review-charges.png'), fullPage: true });

    // Cancelled: nothing changes.
    await review.getByRole('button', { name: 'Confirm captured' }).click();
    const confirm = page.getByRole('dialog', { name: 'Confirm captured' });
    expect(await confirm.textContent()).toContain(`charge ${seeded.review.id} (250.00 BRL, customer customer-review, key seed-review)`);
    await confirm.getByRole('button', { name: 'Cancel' }).click();
    expect(await stateOf(seeded.review)).toBe('needs-review');

    // By keyboard: the button takes focus, Enter opens the dialog with Confirm focused, Enter confirms.
    await review.getByRole('button', { name: 'Confirm captured' }).focus();
    await page.keyboard.press('Enter');
    await expect.poll(() => confirm.isVisible(), { timeout: 10_000 }).toBe(true);
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Mark captured');
    await page.keyboard.press('Enter');
    await expect.poll(() => page.locator('#review-result').textContent(), { timeout: 10_000 }).toBe(`Charge ${seeded.review.id}: NEEDS_REVIEW → CAPTURED`);
    expect(await stateOf(seeded.review)).toBe('done');
    expect((await query<{ status: string }>(`select case e.state when 'done' then 'CAPTURED' end as status from S.charges c join S.effects e on e.key = 'charge:' || c.id::text where c.id = $1`, [seeded.review.id]))[0]?.status).toBe('CAPTURED');
    expect(await messagesOf(seeded.review)).toEqual(['ChargeStarted', 'ChargeNeedsReview', 'ChargeCaptured']);
    expect((await (await fetch(`${server.url}/charges/${seeded.review.id}`, { headers: { authorization: `Bearer ${API_KEY}` } })).json()).status).toBe('CAPTURED');
    await expect.poll(() => rows.count(), { timeout: 10_000 }).toBe(1);

    // The stale PENDING one, confirmed not captured.
    const pending = page.locator(`tr[data-charge="${seeded.pending.id}"]`);
    await pending.getByRole('button', { name: 'Confirm not captured' }).click();
    await page.getByRole('dialog', { name: 'Confirm not captured' }).getByRole('button', { name: 'Mark not captured' }).click();
    await expect.poll(() => page.locator('#review-result').textContent(), { timeout: 10_000 }).toBe(`Charge ${seeded.pending.id}: PENDING → FAILED`);
    expect(await stateOf(seeded.pending)).toBe('failed');
    expect(await messagesOf(seeded.pending)).toEqual(['ChargeStarted', 'ChargeFailed']);
    await expect.poll(() => rows.count(), { timeout: 10_000 }).toBe(0);
    expect(await page.locator('#charges-title').textContent()).toBe('Charges in review (0)');
    // The acquirer was asked, never told to capture again.
    expect(acquirer.requestsFor.get('seed-review')!.captures).toBe(1);
    expect(acquirer.requestsFor.get('seed-pending')!.captures).toBe(1);
  });
});
