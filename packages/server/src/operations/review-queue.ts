import type { Charge, Charges } from 'rastro/internal/charges/charges.js';
import { CAPTURE_EFFECT } from 'rastro/internal/charges/sql.js';
import { effectLedger, type EffectRecord, type EffectState } from 'rastro/internal/processing/effect-admin.js';
import type { EventStore } from 'rastro/internal/store/event-store.js';

/**
 * What waits in the review queue, defined once: the figure (and its metric), the overview's
 * cards and the review page's lists all read these definitions, so they cannot disagree.
 *
 * - **Charges in review**: charges whose capture is `needs-review` (reconciliation gave up: a
 *   person decides) or `uncertain` (PENDING; reconciliation is still asking, and a person who
 *   checked with the acquirer may settle it first).
 * - **Effects waiting for review**: effects `uncertain` or `needs-review` other than charge
 *   captures, which are reviewed as their charge.
 */
export const REVIEW_QUEUE = {
  charges: { types: [CAPTURE_EFFECT], states: ['needs-review', 'uncertain'] as EffectState[] },
  effects: { exceptTypes: [CAPTURE_EFFECT], states: ['uncertain', 'needs-review'] as EffectState[] },
} as const;

/** How many charges and effects wait in the review queue. */
export async function reviewQueueCounts(store: EventStore): Promise<{ charges: number; effects: number }> {
  const ledger = effectLedger(store);
  const [charges, effects] = await Promise.all([
    ledger.count({ states: REVIEW_QUEUE.charges.states, types: REVIEW_QUEUE.charges.types }),
    ledger.count({ states: REVIEW_QUEUE.effects.states, exceptTypes: REVIEW_QUEUE.effects.exceptTypes }),
  ]);
  return { charges, effects };
}

/** The charges in review (see {@link REVIEW_QUEUE}), newest first. */
export function chargesInReview(charges: Pick<Charges, 'list'>, limit = 1000): Promise<Charge[]> {
  return charges.list({ captureStates: REVIEW_QUEUE.charges.states, limit });
}

/** The effects waiting for review (see {@link REVIEW_QUEUE}), newest first. */
export function effectsWaitingForReview(store: EventStore, limit = 1000): Promise<EffectRecord[]> {
  return effectLedger(store).list({ states: REVIEW_QUEUE.effects.states, exceptTypes: REVIEW_QUEUE.effects.exceptTypes, limit });
}
