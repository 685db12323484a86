import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Command } from 'commander';
import { runCommissionStory } from '../demo/commission-story.js';
import { runOrderStory } from '../demo/order-story.js';
import { runChargeStory } from '../demo/charge-story.js';
import { group } from './command-tree.js';

/** `rastro demo commission`: the seed's story on a fresh embedded database. */
export async function runCommissionDemo(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'rastro-demo-'));
  console.log(`commission story on an embedded database in ${dir}\n`);
  try {
    const report = await runCommissionStory({ url: dir, schema: 'rastro', askProvider: true, log: (line) => console.log(line) });
    if (report.uncertainLeft > 0) console.log(`\n${report.uncertainLeft} effect(s) still uncertain`);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** `rastro demo orders`: seed 004's story on a fresh embedded database. */
export async function runOrderDemo(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'rastro-demo-'));
  console.log(`order story on an embedded database in ${dir}\n`);
  try {
    const report = await runOrderStory({ url: dir, log: (line) => console.log(line) });
    console.log(`\n${report.alerts.length} alert(s) in all: only the real cancellation`);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** `rastro demo charges`: seed 002's story on a fresh embedded database. */
export async function runChargeDemo(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'rastro-demo-'));
  console.log(`charge story on an embedded database in ${dir}\n`);
  try {
    await runChargeStory({ dataDir: dir, log: (line) => console.log(line) });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** `rastro demo …`: each story on a fresh embedded database. */
export function registerDemoCommands(program: Command): void {
  const demo = group(program, 'demo', 'stories told end to end on an embedded database');
  demo.command('commission').summary('run the commission story end to end on an embedded database')
    .description('the commission story end to end on an embedded database').action(runCommissionDemo);
  demo.command('orders').summary("run seed 004's order story end to end on an embedded database")
    .description("Runs seed 004's story (order 260065713, the five stuck orders, a real cancellation after import) on a fresh embedded database, with a fake provider sending webhooks and serving REST pages.")
    .action(runOrderDemo);
  demo.command('charges').summary("run seed 002's charge story end to end on an embedded database")
    .description("Runs seed 002's story on a fresh embedded database: a charge captured at the acquirer whose API process is SIGKILLed before it records the outcome, the client's retry answered 202, reconciliation finding the capture, the outbox events published, and a charge the acquirer cannot account for ending in review.")
    .action(runChargeDemo);
}
