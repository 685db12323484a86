/**
 * Values read through a connection rastro did not configure. rastro's own pool (and a `pg`
 * client or pool it is given) parses int8 as a number and jsonb and timestamps as pg does; a
 * query builder's transaction parses with the application's settings: int8 as a string or a
 * bigint, jsonb or a timestamp perhaps as text. Every read path that can run on such a
 * connection reads its values through these, so its results do not depend on the caller's
 * driver (invariant 11).
 */

/** An int8 (or int4) column as a number; refuses what a number cannot hold exactly. */
export function int8(value: unknown): number {
  if (typeof value === 'number') return value;
  const n = typeof value === 'bigint' ? Number(value) : typeof value === 'string' ? Number(value) : NaN;
  if (!Number.isSafeInteger(n)) throw new RangeError(`int8 value ${String(value).slice(0, 30)} is not an integer within Number.MAX_SAFE_INTEGER`);
  return n;
}

export function nullableInt8(value: unknown): number | null {
  return value === null || value === undefined ? null : int8(value);
}

/** An int8[] column as numbers: an array of numbers, strings or bigints, or its text form `{1,2}`. */
export function int8Array(value: unknown): number[] {
  if (Array.isArray(value)) return value.map(int8);
  if (typeof value === 'string') return value === '{}' ? [] : value.slice(1, -1).split(',').map(int8);
  throw new RangeError('int8[] value is neither an array nor its text form');
}

/** A jsonb column as its value: parsed already, or its text. */
export function json<T>(value: unknown): T {
  return (typeof value === 'string' ? JSON.parse(value) : value) as T;
}

/** A timestamptz column as a Date: one already, or its text (ISO 8601 or PostgreSQL's own form). */
export function instant(value: unknown): Date {
  if (value instanceof Date) return value;
  if (typeof value === 'string') {
    // PostgreSQL writes `2026-12-06 13:00:00.123456+00`: a T and a full offset make it ISO 8601.
    const iso = value.replace(' ', 'T').replace(/([+-]\d\d)$/, '$1:00');
    const date = new Date(iso);
    if (Number.isFinite(date.getTime())) return date;
  }
  throw new RangeError('timestamptz value is neither a Date nor a timestamp');
}
