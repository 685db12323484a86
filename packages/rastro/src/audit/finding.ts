import type { Database, Queryable } from '../db/database.js';
import type { EventStore } from '../store/event-store.js';

/** What a finding names: the row an operator opens to act on it. */
export type SubjectType = 'stream' | 'event' | 'trigger' | 'run' | 'effect' | 'relay' | 'message' | 'charge' | 'capture' | 'order' | 'account' | 'dead-letter' | 'block' | 'digest';

/**
 * One thing an audit found wrong or left behind: the row it names, what is wrong with it, and
 * what to do. `kind` is stable (`version-gap`, `checkpoint-moved-back`, …; docs/audit.md lists them).
 */
export interface Finding {
  check: string;
  kind: string;
  subject: { type: SubjectType; id: string };
  detail: string;
  action: string;
  /** How long it has been so, where the row says (a parked event's, an uncertain effect's age). */
  ageSeconds?: number;
}

/**
 * What a check examines. A full audit examines every row; an incremental one the rows written
 * since the check's last audit: log and outbox rows at or above `fromTxOrder`, and rows of
 * mutable tables whose transaction id is at or above the last audit's oldest running one.
 */
export interface AuditScope {
  readonly full: boolean;
  /** Log and outbox rows with a transaction order at or above this are examined (0: all). */
  readonly fromTxOrder: number;
  /** The frontier when the audit started: rows above it are left to the next audit. */
  readonly frontier: number;
  /**
   * Bind values for {@link changedSince}: the mode (`full`, `xid`, `time`), the 32-bit
   * transaction id, and the time of `--since`.
   */
  readonly changed: readonly [mode: 'full' | 'xid' | 'time', xid: string | null, since: Date | null];
}

/**
 * SQL true for a row of `alias` written since the last audit, with the scope's three values at
 * `$first`…`$first+2`. `age(xmin)` counts transactions from the row's writer to now, so a row
 * is new when it is younger than the last audit's oldest running transaction; with `--since`,
 * the row's own time column decides.
 */
export function changedSince(alias: string, first: number, timeColumn: string): string {
  const [mode, xid, since] = [`$${first}::text`, `$${first + 1}::xid`, `$${first + 2}::timestamptz`];
  return `(${mode} = 'full' or (${mode} = 'xid' and age(${alias}.xmin) <= age(${xid})) or (${mode} = 'time' and ${alias}.${timeColumn} >= ${since}))`;
}

/** What a check remembers between audits (checkpoints it saw, rows it found wrong): JSON. */
export type CheckMemory = Record<string, unknown>;

/** What a check needs: the database, the schema (quoted and not), the scope, its memory, progress. */
export interface CheckContext {
  readonly db: Database;
  readonly store: EventStore<any>;
  /** The schema, validated and quoted. */
  readonly s: string;
  readonly schema: string;
  readonly scope: AuditScope;
  /** What this check remembered at its last audit ({} at the first). */
  readonly memory: CheckMemory;
  /** Rows examined so far, for the progress line. */
  progress(examined: number): void;
}

/** What a check returns: its findings, how many rows it examined, what to remember, its figures. */
export interface CheckResult {
  findings: Finding[];
  examined: number;
  memory: CheckMemory;
  /** Figures that are not findings (a relay's lag), shown beside them. */
  figures?: Record<string, number | null>;
}

/** A named check of the audit. */
export interface AuditCheck {
  readonly name: string;
  /** One line: what it proves. */
  readonly summary: string;
  run(ctx: CheckContext): Promise<CheckResult>;
}

/** Runs `fn` in a read-only REPEATABLE READ transaction: one snapshot for statements that must agree. */
export function inSnapshot<T>(ctx: Pick<CheckContext, 'db'>, fn: (tx: Queryable) => Promise<T>): Promise<T> {
  return ctx.db.transaction(async (tx) => {
    await tx.query('set transaction isolation level repeatable read read only');
    return fn(tx);
  });
}

/** Subject ids a check found wrong last time, to examine again whatever the scope. */
export function rememberedSubjects(memory: CheckMemory): string[] {
  return Array.isArray(memory.found) ? (memory.found as unknown[]).filter((id): id is string => typeof id === 'string') : [];
}

/** At most this many found subjects are remembered per check; the rest wait for a full audit. */
export const REMEMBERED_LIMIT = 10_000;

/** The ids of the subjects of `findings`, to remember. */
export function foundSubjects(findings: Finding[]): string[] {
  return [...new Set(findings.map((finding) => finding.subject.id))].slice(0, REMEMBERED_LIMIT);
}
