import type { Queryable } from '../db/database.js';
import { quoteSchema } from '../db/schema-name.js';
import { int8 } from '../db/values.js';
import type { Finding } from '../audit/finding.js';
import type { TrailCheckpoint, TrailVerification } from './verify.js';

/** A recorded verification: when, how, and what it found. */
export interface VerificationRecord {
  id: number;
  startedAt: Date;
  finishedAt: Date;
  full: boolean;
  findings: Finding[];
  checkpoint: TrailCheckpoint;
}

/** The findings column holds the findings, and what of the checkpoint has no column of its own. */
type Stored = { list: Finding[]; xid: string | null; blockHash: string | null };
type Row = { id: unknown; started_at: Date; finished_at: Date; full_scan: boolean; block: unknown; position: unknown; deleted: unknown; updated: unknown; findings: Stored };

function toRecord(row: Row): VerificationRecord {
  const stored = row.findings;
  return {
    id: int8(row.id), startedAt: row.started_at, finishedAt: row.finished_at, full: row.full_scan, findings: stored.list,
    checkpoint: { block: int8(row.block), blockHash: stored.blockHash, position: int8(row.position), xid: stored.xid, deleted: int8(row.deleted), updated: int8(row.updated) },
  };
}

/** Verifications of the trail, as `rastro verify` records them: the checkpoint the next one starts from, and what the console shows. */
export function trailVerifications(db: Queryable, schema: string) {
  const s = quoteSchema(schema);
  const columns = 'id, started_at, finished_at, full_scan, block, position, deleted, updated, findings';
  return {
    async record(started: Date, verification: TrailVerification): Promise<VerificationRecord> {
      const { checkpoint } = verification;
      const { rows } = await db.query<Row>(
        `insert into ${s}.trail_verifications (started_at, finished_at, full_scan, block, position, deleted, updated, findings)
         values ($1, now(), $2, $3, $4, $5, $6, $7) returning ${columns}`,
        [started, verification.full, checkpoint.block, checkpoint.position, checkpoint.deleted, checkpoint.updated,
          JSON.stringify({ list: verification.findings, xid: checkpoint.xid, blockHash: checkpoint.blockHash })],
      );
      return toRecord(rows[0]!);
    },
    async latest(): Promise<VerificationRecord | undefined> {
      const row = (await db.query<Row>(`select ${columns} from ${s}.trail_verifications order by id desc limit 1`)).rows[0];
      return row && toRecord(row);
    },
    /** When a verification last found nothing: `rastro verify`'s, or an audit's trail check. */
    async lastClean(): Promise<Date | undefined> {
      const row = (await db.query<{ at: Date | null }>(`select greatest(
          (select max(finished_at) from ${s}.trail_verifications where findings->'list' = '[]'::jsonb),
          (select max(finished_at) from ${s}.audit_runs r where exists (select 1 from jsonb_array_elements(r.checks) c
            where c->>'name' = 'trail' and (c->>'findings')::int = 0))) as at`)).rows[0];
      return row?.at ?? undefined;
    },
  };
}
