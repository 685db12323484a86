import { quoteSchema } from '../db/schema-name.js';
import { ValidationError } from '../errors.js';
import type { EffectTypes } from '../processing/ledger/effect-type.js';
import type { EventStore } from '../store/event-store.js';
import { frontierSql } from '../store/sql.js';
import { auditLog, type AuditCheckpoint, type AuditRecord, type CheckSummary } from './audit-log.js';
import type { ListedCapture } from '../charges/acquirer.js';
import { accountsCheck } from './checks/accounts-check.js';
import { acquirerCheck } from './checks/acquirer-check.js';
import { brokerCheck, type BrokerRecord } from './checks/broker-check.js';
import { providerKeysCheck } from './checks/provider-keys-check.js';
import { chargesCheck } from './checks/charges-check.js';
import { effectsCheck } from './checks/effects-check.js';
import { inboxCheck } from './checks/inbox-check.js';
import { logCheck } from './checks/log-check.js';
import { ordersCheck } from './checks/orders-check.js';
import { outboxCheck } from './checks/outbox-check.js';
import { processorsCheck } from './checks/processors-check.js';
import { providersCheck } from './checks/providers-check.js';
import { trailCheck, type TrailCheckOptions } from './checks/trail-check.js';
import type { AuditCheck, AuditScope, Finding } from './finding.js';

/** Every check, in the order an audit runs them; those of {@link ASKING_CHECKS} only with `askProviders`. */
export const AUDIT_CHECKS = ['log', 'trail', 'processors', 'effects', 'outbox', 'charges', 'orders', 'accounts', 'inbox', 'providers', 'acquirer', 'provider-keys', 'broker'] as const;
export type AuditCheckName = (typeof AUDIT_CHECKS)[number];
/** The checks that ask systems outside the database (providers, the acquirer, the broker). */
const ASKING_CHECKS: readonly AuditCheckName[] = ['providers', 'acquirer', 'provider-keys', 'broker'];

export interface AuditOptions {
  /** Examine everything, not only what changed since each check's last audit. */
  full?: boolean;
  /** Only these checks. @defaultValue all (providers only with `askProviders`) */
  checks?: readonly string[];
  /** Examine what changed since this time instead of since the last audit. */
  since?: Date;
  /** Ask the providers about settled keys (the `providers` check). */
  askProviders?: boolean;
  /** The effect types that can ask their provider, for `providers` (and, those that can list, `provider-keys`). */
  effectTypes?: EffectTypes;
  /** The acquirer's captures since a time, for `acquirer`. */
  listCaptures?: (since: Date) => AsyncIterable<ListedCapture>;
  /** The messages the broker stored since a time, for `broker` (JetStream; a RabbitMQ queue cannot be read back). */
  listBrokerMessages?: (since: Date) => AsyncIterable<BrokerRecord>;
  /** The digests published outside the database and the key they are signed with, for `trail`. */
  digests?: TrailCheckOptions['digests'];
  digestPublicKey?: TrailCheckOptions['publicKey'];
  /** How far back `acquirer`, `provider-keys` and `broker` look without `since`, in ms. @defaultValue 24 h */
  lookbackMs?: number;
  /** Keys the providers are asked about per audit. @defaultValue 100 */
  providerSample?: number;
  /** Questions per second to providers at most. @defaultValue 10 */
  providerPerSecond?: number;
  /** The event types a processor handles, when known: live runs of unknown ones are not checked for silent stops. */
  typesOf?: (processor: string) => string[] | null;
  /** RASTRO_CHARGE_DEADLINE_SECONDS, in ms. @defaultValue 2 min */
  chargeDeadlineMs?: number;
  /** RASTRO_OUTBOX_RETENTION_DAYS. @defaultValue 7 */
  outboxRetentionDays?: number;
  /** How often serve runs outbox retention, in ms. @defaultValue 1 h */
  retentionIntervalMs?: number;
  /** Record the audit and move the checkpoints. @defaultValue true */
  record?: boolean;
  /** Called as a check examines rows. */
  onProgress?: (check: string, examined: number) => void;
}

/** An audit's result: per check what it examined and found, and every finding. */
export interface AuditReport extends Omit<AuditRecord, 'id'> {
  /** The recorded audit's id (0 when not recorded). */
  id: number;
  /** No finding. */
  clean: boolean;
}

/** Checks the names of `--check`; throws ValidationError naming the unknown one. */
export function validateCheckNames(names: readonly string[]): AuditCheckName[] {
  for (const name of names) {
    if (!(AUDIT_CHECKS as readonly string[]).includes(name)) throw new ValidationError('check', `${JSON.stringify(name)} is not a check; choose from ${AUDIT_CHECKS.join(', ')}`);
  }
  return [...new Set(names)] as AuditCheckName[];
}

function checksFor(options: AuditOptions): AuditCheck[] {
  const names = options.checks ? validateCheckNames(options.checks) : AUDIT_CHECKS.filter((name) => !ASKING_CHECKS.includes(name) || options.askProviders);
  const since = options.since ?? new Date(Date.now() - (options.lookbackMs ?? 24 * 3_600_000));
  const all: Record<AuditCheckName, () => AuditCheck> = {
    log: () => logCheck,
    trail: () => trailCheck({ digests: options.digests, publicKey: options.digestPublicKey }),
    processors: () => processorsCheck({ typesOf: options.typesOf }),
    effects: () => effectsCheck,
    outbox: () => outboxCheck({ retentionDays: options.outboxRetentionDays ?? 7, retentionIntervalMs: options.retentionIntervalMs }),
    charges: () => chargesCheck({ deadlineMs: options.chargeDeadlineMs, retentionDays: options.outboxRetentionDays }),
    orders: () => ordersCheck,
    accounts: () => accountsCheck,
    inbox: () => inboxCheck,
    providers: () => providersCheck({ types: options.effectTypes ?? {}, sample: options.providerSample, perSecond: options.providerPerSecond }),
    acquirer: () => acquirerCheck({ listCaptures: options.listCaptures, since }),
    'provider-keys': () => providerKeysCheck({ types: options.effectTypes ?? {}, since }),
    broker: () => brokerCheck({ listMessages: options.listBrokerMessages, since }),
  };
  return AUDIT_CHECKS.filter((name) => names.includes(name)).map((name) => all[name]());
}

/** 32-bit transaction ids wrap: past this many transactions an `age()` comparison means nothing, so the audit goes full. */
const XID_HORIZON = 2 ** 31 - 10_000_000;

function scopeSql(s: string) {
  return {
    now: `select pg_snapshot_xmin(pg_current_snapshot())::text::bigint as xmin, ${frontierSql(s)} as frontier, now() as now`,
    /** The lowest transaction order of log and outbox rows written since $1. */
    since: `select least((select min(tx_order) from ${s}.events where recorded_at >= $1), (select min(tx_order) from ${s}.outbox where created_at >= $1)) as tx_order`,
  } as const;
}

/** What one check examines: everything, since a time, or since its last audit. */
function scopeOf(previous: AuditCheckpoint | undefined, now: { xmin: number; frontier: number }, options: AuditOptions, sinceTxOrder: number | undefined): AuditScope {
  const frontier = now.frontier;
  if (options.since) return { full: false, fromTxOrder: sinceTxOrder ?? frontier, frontier, changed: ['time', null, options.since] };
  if (options.full || !previous || now.xmin - previous.xmin >= XID_HORIZON) return { full: true, fromTxOrder: 0, frontier, changed: ['full', null, null] };
  return { full: false, fromTxOrder: previous.txOrder, frontier, changed: ['xid', String(previous.xmin % 2 ** 32), null] };
}

/**
 * Audits a running deployment: runs the checks, each on what changed since its last audit (or
 * everything with `full`), read-only on the tables it checks, and records the result and each
 * check's checkpoint in the audit's own tables.
 *
 * @example
 * ```ts
 * const report = await runAudit(store, { full: true })
 * for (const finding of report.findings) console.log(finding.check, finding.subject.id, finding.detail)
 * ```
 */
export async function runAudit(store: EventStore<any>, options: AuditOptions = {}): Promise<AuditReport> {
  const checks = checksFor(options);
  const s = quoteSchema(store.schema);
  const sql = scopeSql(s);
  const log = auditLog(store.db, store.schema);
  const startedAt = new Date();
  const previous = await log.checkpoints(checks.map((check) => check.name));
  const nowRow = (await store.db.query<{ xmin: number; frontier: number; now: Date }>(sql.now)).rows[0]!;
  const now = { xmin: Number(nowRow.xmin), frontier: Number(nowRow.frontier) };
  const sinceTxOrder = options.since ? (await store.db.query<{ tx_order: number | null }>(sql.since, [options.since])).rows[0]?.tx_order : undefined;
  const findings: Finding[] = [];
  const summaries: CheckSummary[] = [];
  const next = new Map<string, AuditCheckpoint>();
  for (const check of checks) {
    const scope = scopeOf(previous.get(check.name), now, options, sinceTxOrder === null || sinceTxOrder === undefined ? undefined : Number(sinceTxOrder));
    const result = await check.run({
      db: store.db, store, s, schema: store.schema, scope, memory: previous.get(check.name)?.memory ?? {},
      progress: (examined) => options.onProgress?.(check.name, examined),
    });
    findings.push(...result.findings);
    summaries.push({ name: check.name, summary: check.summary, examined: result.examined, findings: result.findings.length, incremental: !scope.full, ...(result.figures ? { figures: result.figures } : {}) });
    // --since looks at another range than the checkpoint's: it leaves the checkpoint where it is.
    if (!options.since) next.set(check.name, { txOrder: now.frontier, xmin: now.xmin, memory: result.memory });
  }
  const audit = {
    startedAt, finishedAt: new Date(), full: checks.every((check) => summaries.find((x) => x.name === check.name)?.incremental === false),
    complete: AUDIT_CHECKS.every((name) => ASKING_CHECKS.includes(name) || checks.some((check) => check.name === name)),
    checks: summaries, findings,
  };
  const id = options.record === false ? 0 : await log.record(audit, next);
  return { ...audit, id, clean: findings.length === 0 };
}
