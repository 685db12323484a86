import { quoteSchema } from '../db/schema-name.js';
import { int8 } from '../db/values.js';
import { NotSealedError, ValidationError } from '../errors.js';
import type { EventStore } from '../store/event-store.js';
import { UUID } from '../store/validate-append.js';
import { blockHash, GENESIS, type BlockHeader } from './block.js';
import { digestSignedBy, type Digest } from './digest.js';
import { eventLink, type LinkedEvent } from './event-link.js';
import { merklePath, rootFromPath } from './merkle.js';
import { toBlock } from './sealer.js';
import { linkOf, trailSql, verifySql } from './sql.js';

/**
 * A proof that one event is in the trail a digest names: the event as its link hashes it, its
 * Merkle audit path in its block, and the chain of block headers from its block to the digest's.
 * Checked by {@link verifyProof} with no database.
 */
export interface TrailProof {
  format: 'rastro-proof/1';
  schema: string;
  event: LinkedEvent & { position: number; txOrder: number; prev: string | null; link: string };
  /** The event's place among its block's events, and the audit path (hex, from the leaf up). */
  leaf: number;
  path: string[];
  /** Its block, then every block after it up to the digest's, with their hashes. */
  blocks: (BlockHeader & { hash: string })[];
  digest: { block: number; hash: string };
}


type EventRow = {
  id: string; stream_id: string; stream_version: unknown; schema_version: unknown; occurred: string; recorded: string; type: string;
  data: string; metadata: string; position: unknown; tx_order: unknown; link: string | null; prev: string | null;
};

/**
 * The proof of event `eventId` against `digest` (a digest taken at or after its block), or
 * against the head of the trail when no digest is given.
 */
export async function proveEvent(store: EventStore<any>, eventId: string, options: { digest?: Digest } = {}): Promise<TrailProof> {
  if (typeof eventId !== 'string' || !UUID.test(eventId)) throw new ValidationError('eventId', 'must be an event id (a UUID)');
  const s = quoteSchema(store.schema);
  const trail = trailSql(s);
  return store.db.transaction(async (tx) => {
    await tx.query('set transaction isolation level repeatable read read only');
    const { rows: [event] } = await tx.query<EventRow>(`select e.id, e.stream_id, e.stream_version, e.schema_version,
        (extract(epoch from e.occurred_at) * 1000000)::bigint::text as occurred, (extract(epoch from e.recorded_at) * 1000000)::bigint::text as recorded,
        e.type, e.data::text as data, e.metadata::text as metadata, e.position, e.tx_order, encode(${linkOf('e', s)}, 'hex') as link,
        (select encode(${linkOf('p', s)}, 'hex') from ${s}.events p where p.stream_id = e.stream_id and p.stream_version = e.stream_version - 1) as prev
      from ${s}.events e where e.id = $1`, [eventId.toLowerCase()]);
    if (!event) throw new ValidationError('eventId', `no event ${eventId}`);
    const [position, txOrder] = [int8(event.position), int8(event.tx_order)];
    const { rows: [blockRow] } = await tx.query<Parameters<typeof toBlock>[0]>(`select ${trail.blockColumns} from ${s}.trail_blocks
      where (first_tx_order, first_position) <= ($1, $2) and (last_tx_order, last_position) >= ($1, $2)`, [txOrder, position]);
    if (!blockRow) throw new NotSealedError(`event ${eventId}`);
    const block = toBlock(blockRow);
    const links = (await tx.query<{ link: Uint8Array }>(verifySql(s).blockLinks, [block.firstTxOrder, block.firstPosition, block.lastTxOrder, block.lastPosition])).rows.map((row) => row.link);
    const { rows: [ordinal] } = await tx.query<{ n: unknown }>(`select count(*)::bigint as n from ${s}.events e
      where (e.tx_order, e.position) >= ($1, $2) and (e.tx_order, e.position) < ($3, $4)`, [block.firstTxOrder, block.firstPosition, txOrder, position]);
    const leaf = int8(ordinal!.n);
    const until = options.digest?.block ?? (await tx.query<{ last: unknown }>(verifySql(s).blockCount)).rows[0]!.last;
    if (int8(until) < block.block) throw new ValidationError('digest', `the digest names block ${String(until)}, taken before block ${block.block} sealed the event: take a newer one`);
    const blocks = (await tx.query<Parameters<typeof toBlock>[0]>(trail.blocks, [block.block, until])).rows.map(toBlock)
      .map(({ sealedAt: _sealedAt, ...header }) => header);
    const head = blocks[blocks.length - 1]!;
    return {
      format: 'rastro-proof/1',
      schema: store.schema,
      event: {
        id: event.id, streamId: event.stream_id, streamVersion: int8(event.stream_version), schemaVersion: int8(event.schema_version),
        occurredAtMicros: event.occurred, recordedAtMicros: event.recorded, type: event.type, data: event.data, metadata: event.metadata,
        position, txOrder, prev: event.prev, link: event.link ?? '',
      },
      leaf,
      path: merklePath(links, leaf).map((hash) => hash.toString('hex')),
      blocks,
      digest: { block: head.block, hash: head.hash },
    };
  });
}

/**
 * Checks a proof against a digest, with no database: the event hashes to its link from its
 * content and its predecessor's link, the link is in its block's Merkle root through the path,
 * each block's header hashes to its hash and chains to the one before, and the last is the
 * digest's block and hash. With `publicKey`, the digest must also be signed by it. Resolves the
 * problems found; none means the event is in the trail the digest names, as it is shown.
 */
export function verifyProof(proof: TrailProof, digest: Digest, options: { publicKey?: string } = {}): string[] {
  const problems: string[] = [];
  if (proof?.format !== 'rastro-proof/1') return ['this is not a rastro proof (format rastro-proof/1)'];
  if (options.publicKey !== undefined && !digestSignedBy(digest, options.publicKey)) problems.push('the digest is not signed by the trusted key');
  if (digest.schema !== proof.schema) problems.push(`the digest is of schema ${digest.schema}, the proof of ${proof.schema}`);
  const link = eventLink(proof.event.prev, proof.event);
  if (link !== proof.event.link) problems.push('the event does not hash to its link: its content is not what was appended');
  const [block, ...after] = proof.blocks;
  if (!block) return [...problems, 'the proof has no block'];
  const root = rootFromPath(Buffer.from(link, 'hex'), proof.leaf, block.events, proof.path.map((hash) => Buffer.from(hash, 'hex')));
  if (root === undefined || root.toString('hex') !== block.root) problems.push(`the event's path does not lead to block ${block.block}'s Merkle root`);
  let prev = block.prev;
  for (const header of proof.blocks) {
    if (header.prev !== prev) problems.push(`block ${header.block} does not chain to the block before it`);
    if (blockHash(header) !== header.hash) problems.push(`block ${header.block}'s header does not hash to its hash`);
    prev = header.hash;
  }
  const last = after[after.length - 1] ?? block;
  if (last.block !== digest.block || last.hash !== digest.hash) problems.push(`the chain ends at block ${last.block} (${last.hash.slice(0, 12)}…), not at the digest's block ${digest.block} (${digest.hash.slice(0, 12)}…)`);
  if (block.block === 1 && block.prev !== GENESIS) problems.push('block 1 does not start the chain');
  return problems;
}
