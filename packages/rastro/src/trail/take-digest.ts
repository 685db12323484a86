import type { KeyObject } from 'node:crypto';
import { quoteSchema } from '../db/schema-name.js';
import type { EventStore } from '../store/event-store.js';
import { signDigest, type Digest } from './digest.js';
import { lastBlock } from './sealer.js';
import { trailSql } from './sql.js';

/**
 * A digest of the trail's head block, signed with `key` (Ed25519) when one is given; undefined
 * while nothing is sealed.
 *
 * @example
 * ```ts
 * const digest = await takeDigest(store, { key: digestKey(readFileSync(process.env.RASTRO_DIGEST_KEY_FILE!)) })
 * ```
 */
export async function takeDigest(store: EventStore<any>, options: { key?: KeyObject } = {}): Promise<Digest | undefined> {
  const head = await lastBlock(store.db, trailSql(quoteSchema(store.schema)));
  if (!head) return undefined;
  const digest: Digest = {
    format: 'rastro-digest/1', schema: store.schema, block: head.block, hash: head.hash, lastTxOrder: head.lastTxOrder, lastPosition: head.lastPosition,
    sealedAt: head.sealedAt.toISOString(), takenAt: new Date().toISOString(),
  };
  return options.key ? signDigest(digest, options.key) : digest;
}
