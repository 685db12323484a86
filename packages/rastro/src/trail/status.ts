import { quoteSchema } from '../db/schema-name.js';
import { int8 } from '../db/values.js';
import type { EventStore } from '../store/event-store.js';
import { lastBlock } from './sealer.js';
import { trailSql } from './sql.js';
import { trailVerifications } from './verifications.js';

/** What the trail looks like now: its last seal and how far behind it is, its last digest published, its last verification. */
export interface TrailStatus {
  lastSeal: { block: number; hash: string; sealedAt: string; lastPosition: number } | null;
  /** Events committed and not sealed yet, and the age of the oldest. */
  sealLag: { events: number; seconds: number | null };
  lastDigest: { block: number; hash: string; publishedAt: string; target: string } | null;
  lastVerification: { finishedAt: string; full: boolean; findings: number } | null;
  /** When a verification last found nothing. */
  lastCleanVerificationAt: string | null;
}

/** The trail's status, read with a few cheap statements (the seal lag counts only what is not sealed). */
export async function trailStatus(store: EventStore<any>): Promise<TrailStatus> {
  const s = quoteSchema(store.schema);
  const sql = trailSql(s);
  const verifications = trailVerifications(store.db, store.schema);
  const [head, lag, digest, latest, lastClean] = await Promise.all([
    lastBlock(store.db, sql),
    store.db.query<{ events: unknown; seconds: unknown }>(sql.sealLag).then((r) => r.rows[0]!),
    store.db.query<{ block: unknown; hash: string; published_at: Date; target: string }>(
      `select block, encode(hash, 'hex') as hash, published_at, target from ${s}.trail_digests order by id desc limit 1`).then((r) => r.rows[0]),
    verifications.latest(),
    verifications.lastClean(),
  ]);
  return {
    lastSeal: head ? { block: head.block, hash: head.hash, sealedAt: head.sealedAt.toISOString(), lastPosition: head.lastPosition } : null,
    sealLag: { events: int8(lag.events), seconds: lag.seconds === null ? null : Number(lag.seconds) },
    lastDigest: digest ? { block: int8(digest.block), hash: digest.hash, publishedAt: digest.published_at.toISOString(), target: digest.target } : null,
    lastVerification: latest ? { finishedAt: latest.finishedAt.toISOString(), full: latest.full, findings: latest.findings.length } : null,
    lastCleanVerificationAt: lastClean?.toISOString() ?? null,
  };
}
