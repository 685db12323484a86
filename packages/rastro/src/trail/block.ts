import { createHash } from 'node:crypto';

/** A sealed block's header: everything its hash covers. */
export interface BlockHeader {
  block: number;
  firstTxOrder: number;
  firstPosition: number;
  lastTxOrder: number;
  lastPosition: number;
  events: number;
  /** The Merkle root of its events' hashes, in global commit order (hex). */
  root: string;
  /** The previous block's hash (hex); 32 zero bytes for the first block. */
  prev: string;
}

export const GENESIS = '0'.repeat(64);

const int8 = (n: number) => {
  const bytes = Buffer.alloc(8);
  bytes.writeBigInt64BE(BigInt(n));
  return bytes;
};

/**
 * A block's hash: SHA-256 over its previous block's hash, then its number, first and last place
 * in the log (tx_order and position, int8 each), its event count (int4), and its Merkle root.
 */
export function blockHash(header: BlockHeader): string {
  const events = Buffer.alloc(4);
  events.writeInt32BE(header.events);
  return createHash('sha256')
    .update(Buffer.from(header.prev, 'hex'))
    .update(int8(header.block))
    .update(int8(header.firstTxOrder))
    .update(int8(header.firstPosition))
    .update(int8(header.lastTxOrder))
    .update(int8(header.lastPosition))
    .update(events)
    .update(Buffer.from(header.root, 'hex'))
    .digest('hex');
}
