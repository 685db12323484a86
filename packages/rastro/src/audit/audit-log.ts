import type { Database, Queryable } from '../db/database.js';
import { quoteSchema } from '../db/schema-name.js';
import type { CheckMemory, Finding } from './finding.js';

/** Audits kept; older ones are deleted with their findings when a new one is recorded. */
const KEPT_AUDITS = 100;
/** Findings returned with an audit read back. */
const FINDINGS_READ = 5000;

function auditLogSql(s: string) {
  return {
    checkpoints: `select check_name, tx_order, oldest_xid as xmin, memory from ${s}.audit_checkpoints where check_name = any($1::text[])`,
    /** One audit and, in the same statement, its findings. */
    insertRun: `insert into ${s}.audit_runs (started_at, finished_at, full_scan, complete, checks, findings)
      values ($1, $2, $3, $4, $5, $6) returning id`,
    insertFindings: `insert into ${s}.audit_findings (audit_id, n, check_name, kind, subject_type, subject_id, detail, action, age_seconds)
      select $1, f.n, f.check_name, f.kind, f.subject_type, f.subject_id, f.detail, f.action, f.age_seconds from unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::float8[]) with ordinality
        as f(check_name, kind, subject_type, subject_id, detail, action, age_seconds, n)`,
    /** A check's checkpoint moves only forward in time: of two audits at once, the later start wins. */
    saveCheckpoint: `insert into ${s}.audit_checkpoints (check_name, tx_order, oldest_xid, memory, audited_at) values ($1, $2, $3, $4, $5)
      on conflict (check_name) do update set tx_order = excluded.tx_order, oldest_xid = excluded.oldest_xid, memory = excluded.memory, audited_at = excluded.audited_at
      where ${s}.audit_checkpoints.audited_at <= excluded.audited_at`,
    prune: `delete from ${s}.audit_runs where id <= (select max(id) from ${s}.audit_runs) - ${KEPT_AUDITS}`,
    latest: `select id, started_at, finished_at, full_scan, complete, checks, findings from ${s}.audit_runs order by id desc limit 1`,
    lastClean: `select max(finished_at) as at from ${s}.audit_runs where complete and findings = 0`,
    findingsOf: `select check_name, kind, subject_type, subject_id, detail, action, age_seconds from ${s}.audit_findings
      where audit_id = $1 order by n limit ${FINDINGS_READ}`,
  } as const;
}

/** Where a check's last audit stopped. */
export interface AuditCheckpoint {
  txOrder: number;
  xmin: number;
  memory: CheckMemory;
}

/** One check's line in an audit: what it examined, what it found, how. */
export interface CheckSummary {
  name: string;
  summary: string;
  /** Rows (streams, charges, orders…) it examined. */
  examined: number;
  findings: number;
  /** Whether it examined only what changed since its last audit. */
  incremental: boolean;
  figures?: Record<string, number | null>;
}

/** An audit as recorded: its checks, its findings, and whether it found the deployment clean. */
export interface AuditRecord {
  id: number;
  startedAt: Date;
  finishedAt: Date;
  full: boolean;
  /** Every check ran. */
  complete: boolean;
  checks: CheckSummary[];
  findings: Finding[];
}

/** The audit's bookkeeping: checkpoints per check, and the audits with their findings. */
export function auditLog(db: Database, schema: string) {
  const sql = auditLogSql(quoteSchema(schema));
  return {
    async checkpoints(names: string[]): Promise<Map<string, AuditCheckpoint>> {
      const { rows } = await db.query<{ check_name: string; tx_order: number; xmin: number; memory: CheckMemory }>(sql.checkpoints, [names]);
      return new Map(rows.map((row) => [row.check_name, { txOrder: Number(row.tx_order), xmin: Number(row.xmin), memory: row.memory }]));
    },
    /** Records an audit, its findings and the checkpoints of the checks that ran, in one transaction. */
    async record(audit: Omit<AuditRecord, 'id'>, checkpoints: Map<string, AuditCheckpoint>): Promise<number> {
      return db.transaction(async (tx: Queryable) => {
        const { rows } = await tx.query<{ id: number }>(sql.insertRun, [audit.startedAt, audit.finishedAt, audit.full, audit.complete, JSON.stringify(audit.checks), audit.findings.length]);
        const id = Number(rows[0]!.id);
        const f = audit.findings;
        if (f.length > 0) {
          await tx.query(sql.insertFindings, [id, f.map((x) => x.check), f.map((x) => x.kind), f.map((x) => x.subject.type), f.map((x) => x.subject.id),
            f.map((x) => x.detail), f.map((x) => x.action), f.map((x) => x.ageSeconds ?? null)]);
        }
        for (const [name, cp] of checkpoints) await tx.query(sql.saveCheckpoint, [name, cp.txOrder, cp.xmin, JSON.stringify(cp.memory), audit.startedAt]);
        await tx.query(sql.prune);
        return id;
      });
    },
    /** The latest audit's checks, without its findings. */
    async latestSummary(): Promise<Pick<AuditRecord, 'id' | 'finishedAt' | 'checks'> | undefined> {
      const row = (await db.query<{ id: number; finished_at: Date; checks: CheckSummary[] }>(sql.latest)).rows[0];
      return row && { id: Number(row.id), finishedAt: row.finished_at, checks: row.checks };
    },
    /** The latest audit with its findings (the first 5000), or undefined before the first one. */
    async latest(): Promise<AuditRecord | undefined> {
      const { rows } = await db.query<{ id: number; started_at: Date; finished_at: Date; full_scan: boolean; complete: boolean; checks: CheckSummary[]; findings: number }>(sql.latest);
      const row = rows[0];
      if (!row) return undefined;
      const { rows: found } = await db.query<{ check_name: string; kind: string; subject_type: Finding['subject']['type']; subject_id: string; detail: string; action: string; age_seconds: number | null }>(sql.findingsOf, [row.id]);
      return {
        id: Number(row.id), startedAt: row.started_at, finishedAt: row.finished_at, full: row.full_scan, complete: row.complete, checks: row.checks,
        findings: found.map((x) => ({ check: x.check_name, kind: x.kind, subject: { type: x.subject_type, id: x.subject_id }, detail: x.detail, action: x.action, ...(x.age_seconds === null ? {} : { ageSeconds: Number(x.age_seconds) }) })),
      };
    },
    /** When an audit of every check last found nothing, or null. */
    async lastClean(): Promise<Date | null> {
      return (await db.query<{ at: Date | null }>(sql.lastClean)).rows[0]?.at ?? null;
    },
  };
}

export type AuditLog = ReturnType<typeof auditLog>;
