import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Page } from 'playwright-core';
import { acquirerClient } from '../../packages/rastro/src/charges/acquirer.js';
import { startAcquirerFake, type AcquirerFake } from '../../packages/rastro/src/charges/acquirer-fake.js';
import { createCharges, type Charge } from '../../packages/rastro/src/charges/charges.js';
import { runLiveRound } from '../../packages/rastro/src/processing/live-round.js';
import type { EffectPolicy } from '../../packages/rastro/src/processing/policy.js';
import type { Processor } from '../../packages/rastro/src/processing/processor.js';
import { runReplay } from '../../packages/rastro/src/processing/replay-runner.js';
import { startServer, type RunningServer } from '../../packages/server/src/server.js';
import { chargesInEveryStatus } from './charges.js';
import { DATABASE_URL, schemaName } from './databases.js';

export const TIPS_FIXTURE = join(import.meta.dirname, '..', 'fixtures', 'tips-processors.mjs');
/** The simulate run every populated console has, with a diff of every tip. */
export const SIMULATE_RUN = 'console-simulate';

export interface PopulatedConsole {
  server: RunningServer;
  acquirer: AcquirerFake;
  charges: Record<'captured' | 'failed' | 'review' | 'pending', Charge>;
  apiKey: string;
  /** `select count(*)::int as n …` with `S.` for the server's schema. */
  count(sql: string, values?: unknown[]): Promise<number>;
  /** Opens the console at `hash` and enters the key. */
  open(page: Page, hash?: string): Promise<void>;
  close(): Promise<void>;
}

async function tips(): Promise<{ processor: Processor; policy: EffectPolicy }> {
  const fixture = (await import(pathToFileURL(TIPS_FIXTURE).href)) as { processors: Processor[]; TIPS_POLICY: EffectPolicy };
  return { processor: fixture.processors[0]!, policy: fixture.TIPS_POLICY };
}

/**
 * A real server (PostgreSQL at `databaseUrl`, else PGlite) with every page of the console full:
 * eight tips handled live (two uncertain effects, two parked events), a simulate replay with its
 * diff, a charge in every status, and two samples of the figures for the charts.
 */
export async function populatedConsole(options: { databaseUrl?: string; apiKey?: string } = {}): Promise<PopulatedConsole> {
  const apiKey = options.apiKey ?? 'console-key';
  const databaseUrl = options.databaseUrl ?? DATABASE_URL;
  const acquirer = await startAcquirerFake();
  const server = await startServer({
    port: 0, host: '127.0.0.1', logLevel: 'silent', apiKey, processors: TIPS_FIXTURE, schema: schemaName(),
    acquirerUrl: acquirer.url, acquirerTimeoutMs: 500, chargeDeadlineSeconds: 1, chargeReviewAfterSeconds: 3, reconcileIntervalSeconds: 0,
    ...(databaseUrl ? { databaseUrl } : { dataDir: 'memory://' }),
  });
  const { processor, policy } = await tips();
  const flags: Record<number, object> = { 3: { flaky: true }, 5: { bad: true }, 6: { flaky: true }, 7: { bad: true } };
  for (let n = 1; n <= 8; n++) {
    await server.store.append(`tip-${n}`, [{ type: 'tip.paid', data: { cents: n * 100, ...flags[n] } }], { expectedVersion: 'no-stream' });
  }
  await runLiveRound(processor, { store: server.store, policy, partitions: 2 });
  // The fix: every tip doubled, and the bad ones handled (so the simulate run parks nothing).
  Object.assign(process.env, { TIPS_MULTIPLIER: '2', TIPS_FIXED: '1' });
  try {
    await runReplay(processor, { store: server.store, runId: SIMULATE_RUN, policy, simulate: true });
  } finally {
    delete process.env.TIPS_MULTIPLIER;
    delete process.env.TIPS_FIXED;
  }
  const charges = createCharges(server.store, { acquirer: acquirerClient(acquirer.url), timeoutMs: 1_000, deadlineMs: 1_200, reviewAfterMs: 2_500, backoff: { initialMs: 100, maxMs: 400 } });
  const seeded = await chargesInEveryStatus(server.store, charges, acquirer);
  await server.figureHistory.sample();
  await new Promise((resolve) => setTimeout(resolve, 300));
  await server.figureHistory.sample();
  return {
    server,
    acquirer,
    charges: seeded,
    apiKey,
    async count(sql, values = []) {
      return (await server.db.query<{ n: number }>(sql.replaceAll('S.', `"${server.config.schema}".`), values)).rows[0]!.n;
    },
    async open(page, hash = '#/overview') {
      await page.goto(`${server.url}/console/${hash}`);
      const dialog = page.getByRole('dialog', { name: 'API key' });
      await dialog.getByLabel('API key').fill(apiKey);
      await dialog.getByRole('button', { name: 'Use this key' }).click();
    },
    async close() {
      const schema = server.config.schema;
      if (databaseUrl) await server.db.query(`drop schema if exists "${schema}" cascade`).catch(() => undefined);
      await server.close();
      await acquirer.close();
    },
  };
}
