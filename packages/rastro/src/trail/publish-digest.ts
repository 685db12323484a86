import { randomUUID } from 'node:crypto';
import { mkdir, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Publisher } from '../brokers/message.js';
import { quoteSchema } from '../db/schema-name.js';
import type { EventStore } from '../store/event-store.js';
import type { Digest } from './digest.js';

/** Where serve publishes digests: files in a folder, or messages through the configured broker. */
export type DigestTarget = { folder: string } | { publisher: Publisher };

/**
 * Publishes a digest where a database administrator cannot reach it, and records that it did
 * (the console's "last digest published"). A folder gets `<schema>-block-<n>.json`, written
 * whole or not at all; a broker gets a `TrailDigest` message of aggregate `trail`.
 */
export async function publishDigest(store: EventStore<any>, digest: Digest, target: DigestTarget): Promise<string> {
  let where: string;
  if ('folder' in target) {
    await mkdir(target.folder, { recursive: true });
    const file = join(target.folder, `${digest.schema}-block-${digest.block}.json`);
    const partial = `${file}.${process.pid}.partial`;
    await writeFile(partial, `${JSON.stringify(digest, null, 2)}\n`);
    await rename(partial, file);
    where = `folder:${file}`;
  } else {
    await target.publisher.publish({
      id: randomUUID(), aggregateType: 'trail', aggregateId: digest.schema, type: 'TrailDigest', payload: digest,
      headers: {}, traceparent: null, occurredAt: new Date(digest.takenAt),
    });
    where = `broker:${target.publisher.kind}`;
  }
  await store.db.query(`insert into ${quoteSchema(store.schema)}.trail_digests (block, hash, target) values ($1, decode($2, 'hex'), $3)`, [digest.block, digest.hash, where]);
  return where;
}
