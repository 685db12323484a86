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
  if (!(guard.observedAt instanceof Date) || !Number.isFinite(guard.observedAt.getTime())) {
    throw new ValidationError('guard.observedAt', 'must be a valid Date');
  }
  return { version: null, observedAt: guard.observedAt };
}

const seconds = (date: Date) => Math.floor(date.getTime() / 1000);

/**
 * Whether a write may overwrite the current row: the same or a newer version, or an observation
 * in the same second or later (ties apply). The SQL upsert applies the same rule.
 */
export function guardAllows(current: GuardValues | undefined, next: GuardValues): boolean {
  if (!current) return true;
  if (next.version !== null) return current.version === null || current.version <= next.version;
  if (next.observedAt !== null) return current.observedAt === null || seconds(current.observedAt) <= seconds(next.observedAt);
  return false;
}
