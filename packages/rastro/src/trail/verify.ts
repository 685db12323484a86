import type { KeyObject } from 'node:crypto';
import type { Queryable } from '../db/database.js';
import { quoteSchema } from '../db/schema-name.js';
import { int8 } from '../db/values.js';
import type { Finding } from '../audit/finding.js';
import type { EventStore } from '../store/event-store.js';
import { blockHash, GENESIS } from './block.js';
import { digestSignedBy, type Digest } from './digest.js';
import { merkleRoot } from './merkle.js';
import { toBlock, type StoredBlock } from './sealer.js';
import { trailSql, verifySql } from './sql.js';

/** Where a verification stopped: what the next incremental one starts from. */
export interface TrailCheckpoint {
  /** The last block checked, and its hash then. */
  block: number;
  blockHash: string | null;
  /** The last event position checked. */
  position: number;
  /** The oldest transaction running when it started: rows written by it or later are new. */
  xid: string | null;
  /** The trail's tables' deletes and updates as the statistics counted them. */
  deleted: number;
  updated: number;
}

export interface VerifyOptions {
  /** Check everything, not only what was written since `since`. */
  full?: boolean;
  /** The last verification's checkpoint; without one, everything is checked. */
  since?: TrailCheckpoint;
  /** Digests kept outside the database: each must still be part of the chain. */
  digests?: { digest: Digest; source: string }[];
  /** The public key digests must be signed with (PEM); digests are not checked for a signature without one. */
  publicKey?: string | KeyObject;
  /** Most findings of one kind. @defaultValue 1000 */
  limit?: number;
  onProgress?: (examined: number) => void;
}

export interface TrailVerification {
  findings: Finding[];
  /** Events, streams and blocks examined. */
  examined: number;
  full: boolean;
  checkpoint: TrailCheckpoint;
}

const ACTION = {
  event: 'restore it from a backup taken before the damage, or an export kept outside; the digest that still matches tells when the trail was last intact',
  block: 'restore the trail from a backup taken before the damage; rastro verify --digest with a digest kept outside tells when it was last intact',
};

function linkFinding(row: { stream_id: string; stream_version: unknown; id: string; problem: string }): Finding {
  const at = `version ${int8(row.stream_version)} of stream ${row.stream_id}`;
  if (row.problem === 'gap') {
    return { check: 'trail', kind: 'event-missing', subject: { type: 'stream', id: row.stream_id }, detail: `the event before ${at} is missing: it was deleted behind the immutability trigger`, action: ACTION.event };
  }
  if (row.problem === 'unhashed') {
    return { check: 'trail', kind: 'event-unhashed', subject: { type: 'event', id: row.id }, detail: `${at} has no hash: it was written behind rastro's back, not appended`, action: ACTION.event };
  }
  return { check: 'trail', kind: 'event-altered', subject: { type: 'event', id: row.id }, detail: `${at} does not hash to its stored link: its content (or its link) was changed after it was appended`, action: ACTION.event };
}

async function checkBlocks(db: Queryable, s: string, from: number, expectedPrev: string, limit: number, examined: (n: number) => void): Promise<{ findings: Finding[]; last: StoredBlock | undefined }> {
  const trail = trailSql(s);
  const verify = verifySql(s);
  const findings: Finding[] = [];
  let prev = expectedPrev;
  let last: StoredBlock | undefined;
  const { rows: [count] } = await db.query<{ last: unknown }>(verify.blockCount);
  const end = int8(count!.last);
  for (let first = from; first <= end && findings.length < limit; first += 100) {
    const { rows } = await db.query<Parameters<typeof toBlock>[0]>(trail.blocks, [first, Math.min(end, first + 99)]);
    let expected = first;
    for (const block of rows.map(toBlock)) {
      const subject = { type: 'block' as const, id: String(block.block) };
      if (block.block !== expected) {
        findings.push({ check: 'trail', kind: 'block-missing', subject: { type: 'block', id: String(expected) }, detail: `blocks ${expected} to ${block.block - 1} are missing: they were deleted`, action: ACTION.block });
      }
      expected = block.block + 1;
      if (block.prev !== prev) findings.push({ check: 'trail', kind: 'block-chain-broken', subject, detail: `block ${block.block} does not chain to the block before it: its previous hash is not that block's`, action: ACTION.block });
      if (blockHash(block) !== block.hash) findings.push({ check: 'trail', kind: 'block-altered', subject, detail: `block ${block.block}'s hash is not the hash of its header: the block was edited`, action: ACTION.block });
      const links = (await db.query<{ link: Uint8Array | null }>(verify.blockLinks, [block.firstTxOrder, block.firstPosition, block.lastTxOrder, block.lastPosition])).rows;
      examined(links.length + 1);
      if (links.length !== block.events || links.some((row) => row.link === null) || merkleRoot(links.map((row) => row.link!)).toString('hex') !== block.root) {
        findings.push({
          check: 'trail', kind: 'block-events-changed', subject,
          detail: `the events block ${block.block} sealed changed: ${links.length === block.events ? 'their hashes or their order' : `it sealed ${block.events}, its range now holds ${links.length}`} (an event edited, deleted, inserted or reordered)`,
          action: ACTION.block,
        });
      }
      prev = block.hash;
      last = block;
    }
  }
  return { findings, last };
}

function checkDigests(digests: NonNullable<VerifyOptions['digests']>, blocks: Map<number, string>, lastBlock: number, schema: string, publicKey: VerifyOptions['publicKey']): Finding[] {
  const findings: Finding[] = [];
  for (const { digest, source } of digests) {
    const subject = { type: 'digest' as const, id: source };
    if (digest.schema !== schema) {
      findings.push({ check: 'trail', kind: 'digest-of-another-trail', subject, detail: `the digest is of schema ${digest.schema}, not ${schema}`, action: 'check it against the trail it was taken of' });
    } else if (publicKey !== undefined && !digestSignedBy(digest, publicKey)) {
      findings.push({ check: 'trail', kind: 'digest-signature-invalid', subject, detail: 'its signature is missing, or not made by the trusted key: the digest may be forged', action: 'use digests signed with the key RASTRO_DIGEST_KEY_FILE holds; keep them where a database administrator cannot write' });
    } else if (digest.block > lastBlock) {
      findings.push({
        check: 'trail', kind: 'digest-beyond-trail', subject,
        detail: `the digest names block ${digest.block}, but the trail ends at block ${lastBlock}: the log lost its tail after the digest was taken (cut, or restored from an older backup, or a failover that lost the last commits)`,
        action: 'find what the lost events did outside (rastro audit --ask-providers), and restore them from a backup or the digest-era export',
      });
    } else if (blocks.get(digest.block) !== digest.hash) {
      findings.push({
        check: 'trail', kind: 'digest-not-in-chain', subject,
        detail: `block ${digest.block} no longer hashes to what the digest recorded: the trail was rewritten at or before that block since the digest was taken, or a failover lost the block's last commits and the promoted standby sealed the same number over other events`,
        action: ACTION.block,
      });
    }
  }
  return findings;
}

/**
 * Verifies the trail: each event's link against its content and its predecessor's, each
 * stream's row against its last event, each block's Merkle root, header hash and chain, and
 * every digest given against the chain. Incremental with `since`: the events, stream rows and
 * blocks written since, unless the statistics count a delete or an update of the trail's tables
 * since (nothing of rastro's ever does one): then everything, to name what changed. Reads one
 * snapshot; writes nothing.
 */
export async function verifyTrail(store: EventStore<any>, options: VerifyOptions = {}): Promise<TrailVerification> {
  const s = quoteSchema(store.schema);
  const sql = verifySql(s);
  const limit = options.limit ?? 1000;
  let examined = 0;
  const count = (n: number) => {
    examined += n;
    options.onProgress?.(examined);
  };
  // PGlite is one backend: what it changed reaches the statistics when it flushes them, now.
  if (store.db.kind === 'pglite') {
    await store.db.query('select pg_stat_force_next_flush()');
    await store.db.query('select 1');
  }
  return store.db.transaction(async (tx) => {
    await tx.query('set transaction isolation level repeatable read read only');
    const findings: Finding[] = [];
    const writes = await tx.query<{ deleted: unknown; updated: unknown }>(sql.tableWrites, [store.schema]).then((r) => r.rows[0]!, () => ({ deleted: 0, updated: 0 }));
    const [deleted, updated] = [int8(writes.deleted), int8(writes.updated)];
    const since = options.full ? undefined : options.since;
    const tampered = since !== undefined && (deleted > since.deleted || updated > since.updated);
    // Counts that went down: the statistics were reset (a crash, pg_stat_reset). Nothing to say, but everything is checked.
    const reset = since !== undefined && (deleted < since.deleted || updated < since.updated);
    if (tampered) {
      findings.push({
        check: 'trail', kind: 'rows-deleted-or-updated', subject: { type: 'trigger', id: `${store.schema}.events` },
        detail: `since the last verification the statistics counted ${Math.max(0, deleted - since!.deleted)} deletes and ${Math.max(0, updated - since!.updated)} updates of the trail's tables, which rastro never makes: everything was checked`,
        action: 'read the other findings: they name what changed; then find who disabled the immutability triggers (pg_stat_activity, the server log)',
      });
    }
    const full = since === undefined || tampered || reset;
    const { rows: [snap] } = await tx.query<{ xid: string; position: unknown }>(sql.snapshot);
    const links = full
      ? await tx.query<{ stream_id: string; stream_version: unknown; id: string; problem: string }>(sql.allLinks, [limit])
      : await tx.query<{ stream_id: string; stream_version: unknown; id: string; problem: string }>(sql.newLinks, [since.position, limit]);
    findings.push(...links.rows.map(linkFinding));
    count(full ? int8(snap!.position) : int8(snap!.position) - since.position);
    const streams = await tx.query<{ stream_id: string; version: unknown; last_version: unknown; head_holds: boolean }>(sql.streams, [full ? 'all' : 'changed', since?.xid ?? '0', limit]);
    for (const row of streams.rows) {
      const last = row.last_version === null ? 'has no events' : `ends at version ${int8(row.last_version)}`;
      findings.push({
        check: 'trail', kind: 'stream-row-altered', subject: { type: 'stream', id: row.stream_id },
        detail: int8(row.version) === (row.last_version === null ? -1 : int8(row.last_version)) && !row.head_holds
          ? `its row's head is not its last event's link`
          : `its row says version ${int8(row.version)}, but the stream ${last}: the row (or the events) changed behind rastro's back`,
        action: ACTION.event,
      });
    }
    const fromBlock = full ? 1 : since.block + 1;
    let prev = GENESIS;
    if (!full && since.block > 0) {
      const stored = (await tx.query<Parameters<typeof toBlock>[0]>(trailSql(s).block, [since.block])).rows[0];
      if (!stored || stored.hash !== since.blockHash) {
        findings.push({ check: 'trail', kind: 'block-altered', subject: { type: 'block', id: String(since.block) }, detail: `block ${since.block} changed since the last verification checked it`, action: ACTION.block });
      }
      prev = since.blockHash ?? GENESIS;
    }
    const blocks = await checkBlocks(tx, s, fromBlock, prev, limit, count);
    findings.push(...blocks.findings);
    const last = blocks.last ?? (since && since.block > 0 ? { block: since.block, hash: since.blockHash } : undefined);
    if (options.digests && options.digests.length > 0) {
      const wanted = [...new Set(options.digests.map((d) => d.digest.block))];
      const { rows } = await tx.query<{ block: unknown; hash: string }>(`select block, encode(hash, 'hex') as hash from ${s}.trail_blocks where block = any($1::bigint[])`, [wanted]);
      const { rows: [end] } = await tx.query<{ last: unknown }>(sql.blockCount);
      findings.push(...checkDigests(options.digests, new Map(rows.map((row) => [int8(row.block), row.hash])), int8(end!.last), store.schema, options.publicKey));
    }
    return {
      findings,
      examined,
      full,
      checkpoint: { block: last?.block ?? 0, blockHash: last?.hash ?? null, position: int8(snap!.position), xid: snap!.xid, deleted, updated },
    };
  });
}
