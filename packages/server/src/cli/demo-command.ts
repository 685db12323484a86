import { join } from 'node:path';
import type { Command } from 'commander';
import { resolveConfig } from '../config.js';
import { migrate } from 'rastro/internal/db/migrate.js';
import { openDatabase } from 'rastro/internal/db/open-database.js';
import { DatabaseInUseError, DemoAlreadyToldError } from 'rastro/internal/errors.js';
import { runChargeStory } from '../demo/charge-story.js';
import { runCommissionStory } from '../demo/commission-story.js';
import { runOrderStory, type ServeIntake } from '../demo/order-story.js';
import { buildApp } from '../http/app.js';
import { storyTold, type Story } from '../demo/told-stories.js';
import { createEventStore } from 'rastro/internal/store/event-store.js';
import { group } from './command-tree.js';
import { UsageError } from './usage-error.js';

/** What to look at in the console once a story is told. */
const IN_THE_CONSOLE: Record<Story, string> = {
  commission: 'Replay runs: the dry run fix-2026-10-14-simulate and its diff (Open diff), the replays and the live run; Overview: the notifications in the effect ledger',
  orders: 'Overview: the order normalizer, and the one alert in the effect ledger; GET /orders/pied:260065713 for the order itself',
  charges: 'Review queue: the charge the acquirer could not account for, to confirm captured or not; Overview: charges by status',
};

/**
 * The embedded database a story is told in: `--data-dir`, else the one `npm start` (rastro
 * serve) serves, so the console shows what the story did. Refused while a server has it open
 * (the folder would be corrupted), or when the story was told there already.
 */
async function storyFolder(story: Story, dataDir: string | undefined): Promise<string> {
  const dir = dataDir ?? resolveConfig({}, { ...process.env, DATABASE_URL: '' }).dataDir;
  if (/^\w+:\/\//.test(dir)) throw new UsageError(`--data-dir must be a folder: the story runs processes of its own on it, got ${JSON.stringify(dir)}`);
  const folder = join(dir, 'pg');
  let db;
  try {
    db = await openDatabase({ url: folder });
  } catch (err) {
    if (err instanceof DatabaseInUseError) {
      console.error(`rastro demo ${story} tells its story in ${dir}, which process ${err.pid} (npm start, or rastro serve) has open.`);
      console.error(`Stop it (Ctrl-C), run the demo, then npm start again to see the story in the console; or tell it elsewhere: rastro demo ${story} --data-dir <folder>\n`);
    }
    throw err;
  }
  try {
    await migrate(db);
    if (await storyTold(createEventStore(db), story)) throw new DemoAlreadyToldError(story, dir);
  } finally {
    await db.close();
  }
  return dir;
}

function toldIn(story: Story, dir: string): void {
  const { host, port } = resolveConfig({}, process.env);
  console.log(`\nThe story is kept in ${dir}. Start the server on it (npm start, or rastro serve${dir === resolveConfig({}, process.env).dataDir ? '' : ` with RASTRO_DATA_DIR=${dir}`}; no DATABASE_URL)`);
  console.log(`and open http://${host}:${port}/console/ — ${IN_THE_CONSOLE[story]}.`);
}

/** `rastro demo commission`: a day of wrong commissions, fixed by a replay beside the live consumer. */
export async function runCommissionDemo(options: { dataDir?: string } = {}): Promise<void> {
  const dir = await storyFolder('commission', options.dataDir);
  console.log(`The commission story, told in the embedded database in ${dir}\n`);
  const report = await runCommissionStory({ url: join(dir, 'pg'), schema: 'rastro', askProvider: true, log: (line) => console.log(line) });
  if (report.uncertainLeft > 0) console.log(`\n${report.uncertainLeft} notification(s) still uncertain`);
  toldIn('commission', dir);
}

/** The story's services behind the routes `rastro serve` has, on a free loopback port. */
const serveOnLoopback: ServeIntake = async (services) => {
  const app = await buildApp(services);
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.server.address() as { port: number };
  return { baseUrl: `http://127.0.0.1:${port}`, close: () => app.close() };
};

/** `rastro demo orders`: order snapshots arriving late and out of order, and one true alert. */
export async function runOrderDemo(options: { dataDir?: string } = {}): Promise<void> {
  const dir = await storyFolder('orders', options.dataDir);
  console.log(`The order story, told in the embedded database in ${dir}\n`);
  const report = await runOrderStory({ url: join(dir, 'pg'), log: (line) => console.log(line), serve: serveOnLoopback });
  console.log(`\n${report.alerts.length} alert(s) in all: only the real cancellation`);
  toldIn('orders', dir);
}

/** `rastro demo charges`: a capture whose process died, found again. */
export async function runChargeDemo(options: { dataDir?: string } = {}): Promise<void> {
  const dir = await storyFolder('charges', options.dataDir);
  console.log(`The charge story, told in the embedded database in ${dir}\n`);
  await runChargeStory({ dataDir: dir, log: (line) => console.log(line) });
  toldIn('charges', dir);
}

const DATA_DIR = ['--data-dir <folder>', 'the embedded database to tell it in (default: the one npm start serves, RASTRO_DATA_DIR or ./.rastro)'] as const;

/** `rastro demo …`: each story told in the embedded database `npm start` serves. */
export function registerDemoCommands(program: Command): void {
  const demo = group(program, 'demo', 'stories told end to end in the embedded database npm start serves');
  demo.command('commission').summary('a day of wrong commissions, fixed by a replay beside the live consumer')
    .description('Tells the commission story: a release computes sellers\' commissions ten times too small; its consumer is killed while the notifier hangs; a dry run of the fix shows the change; the fixed consumer goes live and the day is replayed beside it; the notifications whose fate was unknown are settled by asking the notifier, and each seller is notified once. The figures are the same on every run.')
    .option(...DATA_DIR).action(runCommissionDemo);
  demo.command('orders').summary('an order\'s payment reported late and out of order, and one true alert')
    .description('Tells the order story with a fake payment provider sending webhooks and serving REST pages: order 260065713, whose stale cancellation must not raise an alert; five orders whose invoice must land; then a real cancellation after import, alerted once.')
    .option(...DATA_DIR).action(runOrderDemo);
  demo.command('charges').summary('a card capture whose process died, found again')
    .description('Tells the charge story: the acquirer captures a charge and the API process is killed before it writes that down; the shop\'s retry is answered without charging again; reconciliation finds the capture; a charge the acquirer cannot account for goes to a person.')
    .option(...DATA_DIR).action(runChargeDemo);
}
