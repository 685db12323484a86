import { randomUUID } from 'node:crypto';
import { mkdir, readdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Publisher } from '../brokers/message.js';
import { quoteSchema } from '../db/schema-name.js';
import type { EventStore } from '../store/event-store.js';
import { parseDigest, type Digest } from './digest.js';

/** Where serve publishes digests: files in a folder, or messages through the configured broker. */
export type DigestTarget = { folder: string } | { publisher: Publisher };

/**
 * Publishes a digest where a database administrator cannot reach it, and records that it did
 * (the console's "last digest published"). A folder gets `<schema>-block-<n>-<hash>.json`
 * (the hash's first 16 digits), written whole or not at all: a block written again after a
 * failover lost the first one gets a file of its own, and the first digest stays to show it; a broker gets a `TrailDigest` message of aggregate `trail`.
 */
export async function publishDigest(store: EventStore<any>, digest: Digest, target: DigestTarget): Promise<string> {
  let where: string;
  if ('folder' in target) {
    await mkdir(target.folder, { recursive: true });
    const file = join(target.folder, `${digest.schema}-block-${digest.block}-${digest.hash.slice(0, 16)}.json`);
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

/** A published digest read back: the digest, or why the file is not one. */
export type PublishedDigest = { source: string; digest: Digest } | { source: string; problem: string };

/**
 * The digests of `schema` that {@link publishDigest} wrote to `folder`, the `newest` of them by
 * block (every file of a block, when a failover made two). The newest are what a check needs:
 * one that still matches proves, through the chain, every block before it; those that no longer
 * match name what was lost or rewritten since.
 */
export async function readPublishedDigests(folder: string, schema: string, newest = 100): Promise<PublishedDigest[]> {
  const name = new RegExp(`^${schema}-block-(\\d+)-[0-9a-f]{16}\\.json$`);
  let names: string[];
  try {
    names = await readdir(folder);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  const files = names.flatMap((file) => {
    const match = name.exec(file);
    return match ? [{ file, block: Number(match[1]) }] : [];
  });
  const blocks = [...new Set(files.map((f) => f.block))].sort((a, b) => b - a).slice(0, newest);
  const kept = new Set(blocks);
  return Promise.all(files.filter((f) => kept.has(f.block)).sort((a, b) => a.block - b.block || a.file.localeCompare(b.file)).map(async ({ file }) => {
    const source = join(folder, file);
    try {
      return { source, digest: parseDigest(JSON.parse(await readFile(source, 'utf8')), file) };
    } catch (err) {
      return { source, problem: err instanceof SyntaxError ? 'is not JSON' : (err as Error).message };
    }
  }));
}
