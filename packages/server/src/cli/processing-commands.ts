import { readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import { ValidationError } from 'rastro/internal/errors.js';
import { EFFECT_STATES, effectLedger, type EffectState } from 'rastro/internal/processing/effect-admin.js';
import { runLive } from 'rastro/internal/processing/live-runner.js';
import { parkedEvents, type ParkedEvent } from 'rastro/internal/processing/parking.js';
import { validatePolicy, type EffectPolicy } from 'rastro/internal/processing/policy.js';
import { runReplay } from 'rastro/internal/processing/replay-runner.js';
import { runDiff, simulateFailures } from 'rastro/internal/processing/run-diff.js';
import { findProcessor, processorNamed } from '../operations/load-processors.js';
import { serveProcessors } from '../operations/serve-processors.js';
import { group } from './command-tree.js';
import { choiceOption, isoDate, jsonOption, limitOption, processorsOption, wholeNumber } from './options.js';
import { csv } from '../operations/csv.js';
import { counterTable, printJson, printList, table } from './output.js';
import { showWhileRunning, startProgress } from './progress.js';
import { withRoleStore, withServices, withStore } from './services.js';
import { stopSignal } from './stop-signal.js';

interface ReplayOptions {
  from?: Date;
  to?: Date;
  runId?: string;
  simulate?: boolean;
  maxRate?: number;
  yieldToLive?: boolean;
  partitions?: number;
  batchSize?: number;
  policy?: string;
  processors?: string;
  json?: boolean;
}

async function readPolicy(path: string | undefined): Promise<EffectPolicy> {
  if (!path) return {};
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch {
    throw new ValidationError('--policy', `cannot read ${path}`);
  }
  try {
    return validatePolicy(JSON.parse(text));
  } catch (err) {
    if (err instanceof ValidationError) throw err;
    throw new ValidationError('--policy', `${path} is not valid JSON`);
  }
}

async function replay(name: string, options: ReplayOptions): Promise<void> {
  const processor = await findProcessor(name, options.processors);
  const policy = await readPolicy(options.policy);
  const progress = startProgress();
  const summary = await withStore((store) =>
    runReplay(processor, { store, runId: options.runId, from: options.from, to: options.to, simulate: options.simulate ?? false, maxRate: options.maxRate,
      yieldToLive: options.yieldToLive, partitions: options.partitions, batchSize: options.batchSize, policy, onProgress: ({ done, total }) => progress.count(done, total) }),
  );
  progress.count(summary.counters.events ?? 0, summary.total);
  progress.end();
  if (options.json) return printJson({ runId: summary.runId, simulate: options.simulate ?? false, total: summary.total, counters: summary.counters });
  console.log(`run ${summary.runId}${options.simulate ? ' (simulate)' : ''}: ${summary.total} events in range`);
  console.log(counterTable(summary.counters));
  if (options.simulate) console.log(`\nsee the differences with: rastro replay diff ${summary.runId}`);
}

async function replayDiff(runId: string, options: { csv?: boolean; json?: boolean }): Promise<void> {
  const [diff, failed] = await withStore((store) => Promise.all([runDiff(store, runId), simulateFailures(store, runId, { limit: 1000 })]));
  const headers = ['projection', 'key', 'before', 'after'];
  const rows = diff.map((row) => [row.projection, row.key, row.before, row.after]);
  if (options.csv) return void console.log(csv(headers, rows));
  if (options.json) return printJson(diff);
  console.log(rows.length === 0 ? `no differences recorded for ${runId}` : table(headers, rows));
  // A simulate run parks nothing: what it could not handle is shown with its diff.
  if (failed.total > 0) {
    console.log(`\n${failed.total} event(s) the run could not handle (not parked: a simulate run leaves nothing to review):`);
    console.log(table(['event', 'stream', 'reason', 'error'], failed.failures.map((f) => [f.eventId, f.streamId, f.reason, f.error])));
  }
}

async function listEffects(options: { state?: EffectState; limit: number; json?: boolean }): Promise<void> {
  const list = await withStore((store) => effectLedger(store).list({ state: options.state, limit: options.limit }));
  printList(list, options, {
    empty: 'no effects',
    headers: ['key', 'state', 'run', 'on failure', 'updated', 'error'],
    row: (e) => [e.key, e.state, e.runId, e.onFailure, e.updatedAt.toISOString(), e.error],
  });
}

async function resolveEffect(key: string, options: { as: 'done' | 'failed' | 'retry' }): Promise<void> {
  // With the charges' effect type: confirming a charge's capture writes its outbox event too.
  await withServices(({ store, charges }) => effectLedger(store, { types: charges.effectTypes }).resolve(key, options.as));
  console.log({ done: `${key} marked done`, failed: `${key} marked failed: it did not happen and is not retried`, retry: `${key} released: the next run that reaches its event executes it` }[options.as]);
}

/** A parked entry's effects as the ledger holds them: `settled: notify-seller done by run fix-1` once all are done. */
function parkedEffects(parked: ParkedEvent): string {
  const each = parked.effects.map((e) => `${e.effectType} ${e.state} ${e.state === 'done' ? 'by' : 'in'} run ${e.runId}`).join(', ');
  return parked.settled ? `settled: ${each}` : each;
}

async function listParked(options: { runId?: string; limit: number; json?: boolean }): Promise<void> {
  const list = await withStore((store) => parkedEvents(store).list({ runId: options.runId, limit: options.limit }));
  printList(list, options, { empty: 'no parked events', headers: ['event', 'run', 'stream', 'reason', 'effects', 'error'], row: (p) => [p.eventId, p.runId, p.streamId, p.reason, parkedEffects(p), p.error] });
}

// An event parked in several runs (the live run, a replay fixing it) is refused without --run-id.
// The processors are serve's, so an entry serve can retry (the order normalizer's) can be retried here.
const unpark = (action: 'retry' | 'skip') => async (eventId: string, options: { processors?: string; runId?: string }) => {
  await withServices(async (services) => {
    const parked = parkedEvents(services.store);
    const entry = await parked.entry(eventId, { runId: options.runId });
    const processor = processorNamed(await serveProcessors(services, options.processors), entry.processor);
    const target = { runId: entry.runId };
    const result = action === 'retry' ? await parked.retry(processor, eventId, target) : await parked.skip(processor, eventId, target);
    console.log(`run ${entry.runId}: ${result.handled} handled, ${result.stillParked} still parked in stream ${entry.streamId}`);
    for (const done of result.alreadyDone) console.log(`already done, not sent again: ${done.effectType} of event ${done.eventId} (done by run ${done.runId})`);
  });
};

async function live(name: string, options: { policy?: string; processors?: string }): Promise<void> {
  const processor = await findProcessor(name, options.processors);
  const policy = await readPolicy(options.policy);
  await withRoleStore('live', async (store) => {
    const progress = startProgress({ pipedEveryMs: 10_000 });
    const runner = await runLive(processor, { store, policy, onError: (err) => progress.note(`rastro: batch failed: ${(err as Error).message}`) });
    console.log(`live run ${runner.runId} started; partitions ${runner.partitions.join(', ') || 'none yet'}; Ctrl-C stops it`);
    const stopShowing = showWhileRunning(progress, () => `live run ${runner.runId}: ${runner.counters.get('events')} event(s) handled (partitions ${runner.partitions.join(',') || 'none'})`);
    await stopSignal();
    stopShowing();
    await runner.stop();
  });
}

async function sweep(): Promise<void> {
  const { uncertain, released } = await withStore((store) => effectLedger(store).sweep());
  console.log(`abandoned reservations: ${uncertain} moved to uncertain (keep), ${released} released (release)`);
}

const processorArgument = ['<processor>', "the processor's name (the built-in commissions, or one from --processors / rastro.config.js)"] as const;
const policyOption = ['--policy <file>', 'effect policy, a JSON file: {"<effect>": {"mode": "apply|suppress", "onFailure": "keep|release"}}'] as const;

/** `rastro live`, `replay`, `replay diff`, `effects …`, `parked …`, `sweep`. */
export function registerProcessingCommands(program: Command): void {
  program.command('live').description('run a processor live, tailing the log, until Ctrl-C')
    .argument(...processorArgument).option(...policyOption).addOption(processorsOption()).action(live);
  const replayCommand = program.command('replay')
    .summary('run a processor over a window with its own run id and checkpoint')
    .description('run a processor over the events of a window with its own run id and checkpoint; progress on stderr')
    .argument(...processorArgument)
    .option('--from <ts>', 'first occurredAt of the window, ISO 8601', isoDate('--from'))
    .option('--to <ts>', 'end of the window (exclusive), ISO 8601', isoDate('--to'))
    .option('--run-id <id>', 'the run id: its checkpoint resumes a stopped run')
    .option('--simulate', 'call no effect: record what would change (see replay diff)')
    .option('--max-rate <events/s>', 'handle at most this many events per second in this process, to spare the live traffic', wholeNumber('--max-rate', { min: 1 }))
    .option('--no-yield-to-live', 'read ahead even while live runners or relays of the schema run (by default the replay then reads one batch at a time)')
    .option('--partitions <n>', 'spread the streams over n partitions, shared by every process replaying the run id (fixed when the run starts; default 8)', wholeNumber('--partitions', { min: 1, max: 1024 }))
    .option('--batch-size <n>', 'events per batch (default 1000)', wholeNumber('--batch-size', { min: 1, max: 10_000 }))
    .option(...policyOption).addOption(processorsOption()).addOption(jsonOption())
    .action(replay);
  replayCommand.command('diff').description('what a simulated run would change')
    .argument('<runId>', 'the run id of a replay --simulate')
    .option('--csv', 'print RFC 4180 CSV').addOption(jsonOption().conflicts('csv'))
    .action(replayDiff);
  const effects = group(program, 'effects', 'the effect ledger');
  effects.command('list').description('effects in the ledger, newest first')
    .addOption(choiceOption('--state <state>', 'only effects in this state', EFFECT_STATES)).addOption(limitOption(1000)).addOption(jsonOption())
    .action(listEffects);
  effects.command('resolve').description('settle an uncertain effect, or one in review, after checking with the provider')
    .argument('<key>', 'the effect key, as effects list shows it')
    .addOption(choiceOption('--as <outcome>', "done: it happened; failed: it did not, don't retry; retry: release it, so the next run executes it", ['done', 'failed', 'retry']).makeOptionMandatory())
    .action(resolveEffect);
  const parked = group(program, 'parked', 'events a processor parked');
  parked.command('list').description('parked events, with the error').option('--run-id <id>', 'only those of this run').addOption(limitOption(1000)).addOption(jsonOption()).action(listParked);
  const runIdOption = ['--run-id <id>', 'the run the event is parked in (parked list shows it); needed when it is parked in several'] as const;
  parked.command('retry').description("handle a parked event again, then the rest of its stream's parked events").argument('<eventId>', 'the parked event id')
    .option(...runIdOption).addOption(processorsOption()).action(unpark('retry'));
  parked.command('skip').description('never handle this event in its run; handle the rest of its stream').argument('<eventId>', 'the parked event id')
    .option(...runIdOption).addOption(processorsOption()).action(unpark('skip'));
  program.command('sweep').description('move abandoned reservations: keep → uncertain, release → released').action(sweep);
}
