import { readFile } from 'node:fs/promises';
import { ValidationError } from '../errors.js';
import { effectLedger } from '../processing/effect-admin.js';
import { runLive } from '../processing/live-runner.js';
import { parkedEvents } from '../processing/parking.js';
import { validatePolicy, type EffectPolicy } from '../processing/policy.js';
import { runReplay } from '../processing/replay-runner.js';
import { runDiff } from '../processing/run-diff.js';
import type { EventStore } from '../store/event-store.js';
import { findProcessor } from './load-processors.js';
import { csv, progressBar, table } from './output.js';

export interface CommandOptions {
  'run-id'?: string;
  from?: string;
  to?: string;
  simulate?: boolean;
  policy?: string;
  processors?: string;
  csv?: boolean;
  state?: string;
  as?: string;
  limit?: string;
}

function date(field: string, value: string | undefined): Date | undefined {
  if (value === undefined) return undefined;
  const parsed = new Date(value);
  if (!Number.isFinite(parsed.getTime())) throw new ValidationError(field, `is not a date: ${JSON.stringify(value)} (use ISO 8601, e.g. 2026-10-14T00:00:00Z)`);
  return parsed;
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

function counterTable(counters: Record<string, number>): string {
  return table(['counter', 'value'], Object.entries(counters).map(([name, value]) => [name, value]));
}

export async function replayCommand(store: EventStore, args: string[], options: CommandOptions): Promise<void> {
  if (args[0] === 'diff') {
    const runId = args[1];
    if (!runId) throw new ValidationError('runId', 'usage: rastro replay diff <runId> [--csv]');
    const rows = (await runDiff(store, runId)).map((row) => [row.projection, row.key, row.before, row.after]);
    console.log(options.csv ? csv(['projection', 'key', 'before', 'after'], rows) : rows.length === 0 ? `no differences recorded for ${runId}` : table(['projection', 'key', 'before', 'after'], rows));
    return;
  }
  const processor = await findProcessor(args[0], options.processors);
  const bar = progressBar();
  const summary = await runReplay(processor, {
    store,
    runId: options['run-id'],
    from: date('--from', options.from),
    to: date('--to', options.to),
    simulate: options.simulate ?? false,
    policy: await readPolicy(options.policy),
    onProgress: ({ done, total }) => bar.update(done, total),
  });
  bar.update(summary.counters.events ?? 0, summary.total, true);
  bar.finish();
  console.log(`run ${summary.runId}${options.simulate ? ' (simulate)' : ''}: ${summary.total} events in range`);
  console.log(counterTable(summary.counters));
  if (options.simulate) console.log(`\nsee the differences with: rastro replay diff ${summary.runId}`);
}

export async function effectsCommand(store: EventStore, args: string[], options: CommandOptions): Promise<void> {
  const effects = effectLedger(store);
  if (args[0] === 'list') {
    const list = await effects.list({ state: options.state as 'uncertain' | undefined, limit: options.limit ? Number(options.limit) : undefined });
    console.log(
      list.length === 0
        ? 'no effects'
        : table(['key', 'state', 'run', 'on failure', 'updated', 'error'], list.map((e) => [e.key, e.state, e.runId, e.onFailure, e.updatedAt.toISOString(), e.error])),
    );
    return;
  }
  if (args[0] === 'resolve' && args[1]) {
    await effects.resolve(args[1], options.as as 'done' | 'retry');
    console.log(options.as === 'done' ? `${args[1]} marked done` : `${args[1]} released: the next run that reaches its event executes it`);
    return;
  }
  throw new ValidationError('effects', 'usage: rastro effects list [--state uncertain] | rastro effects resolve <key> --as done|retry');
}

export async function parkedCommand(store: EventStore, args: string[], options: CommandOptions): Promise<void> {
  const parked = parkedEvents(store);
  if (args[0] === 'list') {
    const list = await parked.list({ runId: options['run-id'] });
    console.log(list.length === 0 ? 'no parked events' : table(['event', 'run', 'stream', 'reason', 'error'], list.map((p) => [p.eventId, p.runId, p.streamId, p.reason, p.error])));
    return;
  }
  if ((args[0] === 'retry' || args[0] === 'skip') && args[1]) {
    const entry = (await parked.list({ limit: 100_000 })).find((p) => p.eventId === args[1]);
    if (!entry) throw new ValidationError('eventId', `no parked event ${args[1]}`);
    const processor = await findProcessor(entry.processor, options.processors);
    const result = args[0] === 'retry' ? await parked.retry(processor, args[1]) : await parked.skip(processor, args[1]);
    console.log(`${result.handled} handled, ${result.stillParked} still parked in stream ${entry.streamId}`);
    return;
  }
  throw new ValidationError('parked', 'usage: rastro parked list [--run-id ID] | rastro parked retry <eventId> | rastro parked skip <eventId>');
}

export async function sweepCommand(store: EventStore): Promise<void> {
  const { uncertain, released } = await effectLedger(store).sweep();
  console.log(`abandoned reservations: ${uncertain} moved to uncertain (keep), ${released} released (release)`);
}

export async function liveCommand(store: EventStore, args: string[], options: CommandOptions): Promise<void> {
  const processor = await findProcessor(args[0], options.processors);
  const runner = await runLive(processor, { store, policy: await readPolicy(options.policy), onError: (err) => console.error(`rastro: batch failed: ${(err as Error).message}`) });
  console.log(`live run ${runner.runId} started; partitions ${runner.partitions.join(', ') || 'none yet'}; Ctrl-C stops it`);
  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  await runner.stop();
}
