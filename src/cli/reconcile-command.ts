import { ValidationError } from '../errors.js';
import type { EffectTypes } from '../processing/ledger/effect-type.js';
import { reconcileEffects, startReconcileLoop, type ReconcileReport } from '../processing/ledger/reconciler.js';
import type { Services } from '../server.js';
import { loadProcessors } from './load-processors.js';
import { table } from './output.js';

export interface ReconcileCommandOptions {
  once?: boolean;
  /** Keep reconciling, a pass every this many seconds, until SIGINT or SIGTERM. */
  every?: string;
  limit?: string;
  json?: boolean;
  processors?: string;
}

/** The effect types that can ask their provider: charges' capture (with an acquirer) and the processors'. */
async function askableTypes(services: Services, processorsPath: string | undefined): Promise<{ types: EffectTypes; notes: string[] }> {
  const types: Record<string, EffectTypes[string]> = {};
  const notes: string[] = [];
  if (services.charges.canCreate) Object.assign(types, services.charges.effectTypes);
  else notes.push('charges are not reconciled: no acquirer is configured (RASTRO_ACQUIRER_URL)');
  for (const processor of (await loadProcessors(processorsPath)).values()) {
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
  const limit = options.limit === undefined ? 100 : /^\d{1,5}$/.test(options.limit) ? Number(options.limit) : NaN;
  if (!Number.isInteger(limit) || limit < 1 || limit > 10_000) throw new ValidationError('--limit', 'must be a whole number from 1 to 10000');
  const { types, notes } = await askableTypes(services, options.processors);
  for (const note of notes) process.stderr.write(`${note}\n`);
  const names = Object.keys(types);
  if (names.length === 0) {
    if (options.json) console.log(JSON.stringify({ types: [], report: null }));
    else console.log('nothing to reconcile: no effect type can ask its provider');
    return;
  }
  const line = (pass: ReconcileReport) => `asked ${pass.asked}, ${pass.happened + pass.redone} done, ${pass.failed} failed, ${pass.released} released, ${pass.unknown} unknown, ${pass.review} to review`;
  if (options.every !== undefined) {
    const seconds = /^\d{1,5}$/.test(options.every) ? Number(options.every) : NaN;
    if (!(seconds >= 1)) throw new ValidationError('--every', 'must be a whole number of seconds, 1 or more');
    const loop = await startReconcileLoop(services.store, {
      types,
      limit,
      intervalMs: seconds * 1000,
      onPass: (pass) => process.stderr.write(`${new Date().toISOString()} ${line(pass)}\n`),
      onError: (err) => process.stderr.write(`${new Date().toISOString()} reconciliation pass failed, backing off: ${(err as Error).message}\n`),
    });
    console.log(`reconciling ${names.join(', ')} every ${seconds} s until stopped`);
    await new Promise<void>((resolve) => {
      process.once('SIGINT', resolve);
      process.once('SIGTERM', resolve);
    });
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
