import { Option, type Command } from 'commander';
import type { EffectTypes } from 'rastro/internal/processing/ledger/effect-type.js';
import { reconcileEffects, startReconcileLoop, type ReconcileReport } from 'rastro/internal/processing/ledger/reconciler.js';
import type { Services } from '../server.js';
import { serveProcessors } from '../operations/serve-processors.js';
import { jsonOption, limitOption, processorsOption, wholeNumber } from './options.js';
import { table } from './output.js';
import { withRoleServices, withServices } from './services.js';
import { stopSignal } from './stop-signal.js';

export interface ReconcileCommandOptions {
  once?: boolean;
  /** Keep reconciling, a pass every this many seconds, until SIGINT or SIGTERM. */
  every?: number;
  limit: number;
  json?: boolean;
  processors?: string;
}

/** The effect types that can ask their provider: charges' capture (with an acquirer) and the processors'. */
async function askableTypes(services: Services, processorsPath: string | undefined): Promise<{ types: EffectTypes; notes: string[] }> {
  const types: Record<string, EffectTypes[string]> = {};
  const notes: string[] = [];
  if (services.charges.canCreate) Object.assign(types, services.charges.effectTypes);
  else notes.push('charges are not reconciled: no acquirer is configured (RASTRO_ACQUIRER_URL)');
  for (const processor of (await serveProcessors(services, processorsPath)).values()) {
    for (const [name, type] of Object.entries(processor.effects ?? {})) types[name] = type;
  }
  return { types, notes };
}

/**
 * `rastro reconcile`: settles abandoned and uncertain effects by asking their providers, until
 * none is left to ask now (`--once`: one pass). Safe beside other reconcilers: each takes
 * different rows (SKIP LOCKED); run it on a schedule (a CronJob with concurrencyPolicy: Forbid)
 * or leave it to serve's loop.
 */
export async function reconcileCommand(services: Services, options: ReconcileCommandOptions): Promise<void> {
  const limit = options.limit;
  const { types, notes } = await askableTypes(services, options.processors);
  for (const note of notes) process.stderr.write(`${note}\n`);
  const names = Object.keys(types);
  if (names.length === 0) {
    // A loop started to run until SIGTERM stays up: a supervisor would restart one that quits, forever.
    if (options.every !== undefined) {
      process.stderr.write('nothing to reconcile: no effect type can ask its provider; waiting for SIGINT/SIGTERM (restart with RASTRO_ACQUIRER_URL set, or with --processors declaring a reconcilable effect type)\n');
      await stopSignal();
    }
    if (options.json) console.log(JSON.stringify({ types: [], report: null }));
    else if (options.every === undefined) console.log('nothing to reconcile: no effect type can ask its provider');
    return;
  }
  const line = (pass: ReconcileReport) => `asked ${pass.asked}, ${pass.happened + pass.redone} done, ${pass.failed} failed, ${pass.released} released, ${pass.unknown} unknown, ${pass.review} to review`;
  if (options.every !== undefined) {
    const seconds = options.every;
    const loop = await startReconcileLoop(services.store, {
      types,
      limit,
      intervalMs: seconds * 1000,
      onPass: (pass) => process.stderr.write(`${new Date().toISOString()} ${line(pass)}\n`),
      onError: (err) => process.stderr.write(`${new Date().toISOString()} reconciliation pass failed, backing off: ${(err as Error).message}\n`),
    });
    console.log(`reconciling ${names.join(', ')} every ${seconds} s until stopped`);
    await stopSignal();
    await loop.stop();
    if (options.json) console.log(JSON.stringify({ types: names, report: loop.report }));
    return;
  }
  let passes = 0;
  const report: ReconcileReport = await reconcileEffects(services.store, {
    types,
    limit,
    once: options.once,
    onPass: (pass) => {
      passes++;
      if (pass.asked > 0) process.stderr.write(`pass ${passes}: ${line(pass)}\n`);
    },
  });
  if (options.json) {
    console.log(JSON.stringify({ types: names, report }));
    return;
  }
  console.log(`reconciled ${names.join(', ')}`);
  console.log(table(['outcome', 'effects'], Object.entries(report).map(([name, value]) => [name, value])));
}

/** `rastro reconcile [--once] [--every S] [--limit N] [--json] [--processors path]`. */
export function registerReconcileCommand(program: Command): void {
  program.command('reconcile')
    .summary('ask the providers about abandoned and uncertain effects, and settle them by the answer')
    .description(
      'Settles abandoned reservations and uncertain effects of every effect type that can ask its provider (charges, with RASTRO_ACQUIRER_URL; the processors\' declared effects): happened → done, did not happen → released, failed or performed again with the same key, unknown → asked again after a backoff, then review. Runs until nothing is left to ask now; --once: one pass; --every S: a pass every S seconds until SIGTERM. Reconcilers running at once take different rows.',
    )
    .option('--once', 'one pass, then exit')
    .addOption(new Option('--every <seconds>', 'keep reconciling, a pass every this many seconds, until SIGINT/SIGTERM').argParser(wholeNumber('--every', { min: 1, max: 86_400 })).conflicts('once'))
    .addOption(limitOption(100))
    .addOption(jsonOption())
    .addOption(processorsOption())
    .action((options: ReconcileCommandOptions) =>
      options.every === undefined ? withServices((services) => reconcileCommand(services, options)) : withRoleServices('reconcile', (services) => reconcileCommand(services, options)),
    );
}
