import type { Queryable } from '../db/database.js';
import type { EffectState } from './effect-admin.js';
import type { ProcessingSql } from './sql.js';

/**
 * An effect of a parked event as the effect ledger holds it, made by a run of the entry's
 * processor. The ledger is keyed `<event id>:<effect type>` for every run, so an effect a replay
 * made since the event was parked is the same entry a retry of the parked event would find.
 */
export interface ParkedEventEffect {
  effectType: string;
  state: EffectState;
  /** The run that made it: the run the event is parked in, or another of its processor (a replay that handled it since). */
  runId: string;
}

/** An effect a retry found done in the ledger, so did not call again. */
export interface AlreadyDoneEffect extends ParkedEventEffect {
  eventId: string;
}

/**
 * The ledger's entries of `eventIds` made by runs of `processor`, by event id (events with none
 * are absent). Another processor's effects of the same event are not this processor's to settle.
 */
export async function effectsOfEvents(db: Queryable, sql: ProcessingSql, processor: string, eventIds: readonly string[]): Promise<Map<string, ParkedEventEffect[]>> {
  const byEvent = new Map<string, ParkedEventEffect[]>();
  if (eventIds.length === 0) return byEvent;
  const { rows } = await db.query<{ event_id: string; effect_type: string; state: EffectState; run_id: string }>(sql.effectsOfEvents, [eventIds, processor]);
  for (const row of rows) {
    const effects = byEvent.get(row.event_id) ?? [];
    effects.push({ effectType: row.effect_type, state: row.state, runId: row.run_id });
    byEvent.set(row.event_id, effects);
  }
  return byEvent;
}

/**
 * Whether the ledger settles every effect of the event: it holds at least one, and each is `done`.
 * A run reaching a `done` entry never calls its provider again, so a retry sends none of them.
 */
export function effectsSettled(effects: readonly ParkedEventEffect[]): boolean {
  return effects.length > 0 && effects.every((effect) => effect.state === 'done');
}
