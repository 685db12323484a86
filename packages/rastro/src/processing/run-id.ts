import { randomBytes } from 'node:crypto';

/** What a replay run id may be: it is typed on command lines and shown in URLs. */
export const RUN_ID = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,99}$/;

/**
 * A new run id: the prefix, the time to the second, and a random suffix, so two runs started in
 * the same moment (two reprocesses, two clicks) are two runs, never one run shared by accident.
 *
 * @example
 * ```ts
 * newRunId('replay') // 'replay-20261014T120000Z-3f9a1c'
 * ```
 */
export function newRunId(prefix: string): string {
  const time = new Date().toISOString().replace(/\.\d+Z$/, 'Z').replace(/[^0-9TZ]/g, '');
  return `${prefix}-${time}-${randomBytes(3).toString('hex')}`;
}
