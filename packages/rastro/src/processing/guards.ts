import { ValidationError } from '../errors.js';
import type { UpsertGuard } from './processor.js';

/** The guard values a stored or buffered row carries. */
export interface GuardValues {
  version: number | null;
  observedAt: Date | null;
}

export function toGuardValues(guard: UpsertGuard): GuardValues {
  if ('version' in guard) {
    if (!Number.isSafeInteger(guard.version) || guard.version < 0) throw new ValidationError('guard.version', 'must be a non-negative integer');
    return { version: guard.version, observedAt: null };
  }
  if (guard.observedAt === null) return { version: null, observedAt: null };
  if (!(guard.observedAt instanceof Date) || !Number.isFinite(guard.observedAt.getTime())) {
    throw new ValidationError('guard.observedAt', 'must be a valid Date or null');
  }
  return { version: null, observedAt: guard.observedAt };
}

const seconds = (date: Date) => Math.floor(date.getTime() / 1000);

/**
 * The recency rule on its own: an observation applies over `stored` when either has no time, or
 * when it is in the same second or later (ties apply, on purpose: the same snapshot fetched again,
 * at another precision, to bring what the first one lacked).
 */
export function recencyAllows(stored: Date | null, incoming: Date | null): boolean {
  return stored === null || incoming === null || seconds(stored) <= seconds(incoming);
}

/**
 * Whether a write may overwrite the current row: the same or a newer version (a write with a
 * version), or the {@link recencyAllows} rule (a write without one). The SQL upsert applies the
 * same rule.
 */
export function guardAllows(current: GuardValues | undefined, next: GuardValues): boolean {
  if (!current) return true;
  if (next.version !== null) return current.version === null || current.version <= next.version;
  return recencyAllows(current.observedAt, next.observedAt);
}

/**
 * The guard a row carries once `next` applied over `current`: a recency write without a time
 * keeps the stored one (COALESCE), so it never clears the reference that arms the guard.
 */
export function guardAfter(current: GuardValues | undefined, next: GuardValues): GuardValues {
  if (next.version !== null || next.observedAt !== null || !current) return next;
  return { version: null, observedAt: current.observedAt };
}
