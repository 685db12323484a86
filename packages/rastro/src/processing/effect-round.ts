import type { Suspended } from './batch.js';
import { EffectNotAttemptedError, type EffectOutcome } from './processor.js';
import type { EffectRule } from './policy.js';
import type { Counters, RunContext } from './run-context.js';

/** Effect ledger entries read with a batch's events: event position → { effect type: state }. */
export type KnownEffects = ReadonlyMap<number, Readonly<Record<string, string>>>;

/** An effect a handler asked for, waiting for its batch's reservation round. */
export interface EffectRequest extends Suspended<EffectOutcome> {
  /** `<event id>:<effect type>`, from {@link effectKey}. */
  key: string;
  eventId: string;
  /** The event's position: the ledger entry records it, so a batch finds its entries by range. */
  eventPosition: number;
  effectType: string;
  rule: EffectRule;
  call: (idempotencyKey: string) => Promise<unknown>;
}

const ALREADY_RECORDED: EffectOutcome = Object.freeze({ status: 'already-recorded' });
const WOULD_APPLY: EffectOutcome = Object.freeze({ status: 'would-apply' });

/** Outcomes of calls made, written with the batch's state (or on their own if it rolls back). */
export interface EffectOutcomes {
  done: { key: string; result: string }[];
  uncertain: { key: string; error: string }[];
}

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

async function inParallel<T>(items: T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await fn(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

/**
 * What the ledger entry read with an effect's event already settles, counted: every effect of a
 * simulate run, and an effect whose entry is settled (done, failed) or left to reconciliation or
 * review (uncertain, needs-review). Undefined for an effect that needs a reservation round: no
 * entry, or one still reserved.
 */
export function settledEffect(run: RunContext, known: KnownEffects, eventPosition: number, effectType: string, counters: Counters): EffectOutcome | undefined {
  const state = known.get(eventPosition)?.[effectType];
  if (run.simulate && state === undefined) {
    counters.add('would-apply');
    return WOULD_APPLY;
  }
  if (run.simulate || (state !== undefined && state !== 'reserved')) {
    counters.add('already-recorded');
    return ALREADY_RECORDED;
  }
  return undefined;
}

/**
 * One round of effects the ledger did not settle (see {@link settledEffect}): reserve them all
 * in one committed statement, then call the providers of the reservations this run won. The
 * intent is on disk before any call is made.
 */
export async function runEffectRound(run: RunContext, requests: EffectRequest[], counters: Counters, outcomes: EffectOutcomes): Promise<void> {
  if (requests.length === 0) return;
  const keys = requests.map((request) => request.key);
  const { rows } = await run.db.query<{ key: string }>(run.sql.reserve, [
    keys,
    requests.map((request) => request.eventId),
    requests.map((request) => request.effectType),
    requests.map((request) => request.rule.onFailure),
    run.runId,
    run.ownerToken,
    run.leaseMs,
    requests.map((request) => request.eventPosition),
  ], { prepare: true });
  const reserved = new Set(rows.map((row) => row.key));
  const calls: { request: EffectRequest; key: string }[] = [];
  requests.forEach((request, i) => {
    const key = keys[i]!;
    if (reserved.has(key)) calls.push({ request, key });
    else {
      counters.add('already-recorded');
      request.resolve(ALREADY_RECORDED);
    }
  });
  await inParallel(calls, run.effectConcurrency, async ({ request, key }) => {
    let result: unknown;
    try {
      result = await request.call(key);
    } catch (err) {
      if (request.rule.onFailure === 'release' || err instanceof EffectNotAttemptedError) {
        await run.db.query(run.sql.release, [key, run.ownerToken]);
        counters.add('released-after-failure');
        request.reject(err);
      } else {
        outcomes.uncertain.push({ key, error: message(err).slice(0, 2000) });
        counters.add('uncertain');
        request.resolve({ status: 'uncertain', error: message(err) });
      }
      return;
    }
    outcomes.done.push({ key, result: JSON.stringify(result ?? null) });
    counters.add('applied');
    request.resolve({ status: 'applied', result });
  });
}

/** Records the outcomes of calls made, on `target` (the batch's transaction, or the database). */
export async function recordEffectOutcomes(run: RunContext, target: { query: RunContext['db']['query'] }, outcomes: EffectOutcomes): Promise<void> {
  if (outcomes.done.length > 0) {
    // Not prepared: the ledger it updates by key grows from empty during a first run.
    await target.query(run.sql.completeEffects, [outcomes.done.map((o) => o.key), outcomes.done.map((o) => o.result), run.ownerToken]);
  }
  if (outcomes.uncertain.length > 0) {
    await target.query(run.sql.markUncertain, [outcomes.uncertain.map((o) => o.key), outcomes.uncertain.map((o) => o.error), run.ownerToken]);
  }
}
