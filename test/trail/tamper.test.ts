import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Database } from '../../packages/rastro/src/db/database.js';
import { quoteSchema } from '../../packages/rastro/src/db/schema-name.js';
import { createEventStore, type EventStore } from '../../packages/rastro/src/store/event-store.js';
import { blockHash, type BlockHeader } from '../../packages/rastro/src/trail/block.js';
import { merkleRoot } from '../../packages/rastro/src/trail/merkle.js';
import { sealNext } from '../../packages/rastro/src/trail/sealer.js';
import { trailSql } from '../../packages/rastro/src/trail/sql.js';
import { takeDigest } from '../../packages/rastro/src/trail/take-digest.js';
import { publishDigest, readPublishedDigests } from '../../packages/rastro/src/trail/publish-digest.js';
import { runAudit } from '../../packages/rastro/src/audit/run-audit.js';
import { verifyTrail, type TrailCheckpoint } from '../../packages/rastro/src/trail/verify.js';
import { freshSchema, postgresBackend } from '../support/databases.js';

// Damage done by hand to a healthy trail, as a database superuser who disables the immutability
// triggers would do it: each kind is found and named, by a full verify and by an incremental one
// after a clean verification.

const postgres = postgresBackend();

async function healthy(): Promise<{ store: EventStore; db: Database; s: string; checkpoint: TrailCheckpoint }> {
  const { db, schema } = await freshSchema(postgres!);
  const store = createEventStore(db, { schema });
  for (let i = 0; i < 24; i++) await store.append(`order-${i % 4}`, [{ type: 'order.changed', data: { n: i } }]);
  const s = quoteSchema(schema);
  while ((await sealNext(db, trailSql(s), 5)) > 0);
  const clean = await verifyTrail(store, { full: true });
  expect(clean.findings).toEqual([]);
  return { store, db, s, checkpoint: clean.checkpoint };
}

/** Runs `sql` as a superuser with the trail's triggers disabled, then makes the statistics count it at once (as they do within seconds anyway). */
async function tamper(db: Database, sql: string): Promise<void> {
  const session = await db.connect();
  const schema = /"(t_[0-9a-f]+)"/.exec(sql)?.[1];
  const tables = ['events', 'event_hashes', 'trail_blocks'].map((table) => `"${schema}".${table}`);
  try {
    await session.query('begin');
    for (const table of tables) await session.query(`alter table ${table} disable trigger user`);
    await session.query(sql);
    for (const table of tables) {
      const name = table.slice(table.lastIndexOf('.') + 1);
      for (const trigger of ['immutable_rows', 'immutable_truncate']) await session.query(`alter table ${table} enable always trigger ${name}_${trigger}`);
    }
    await session.query('commit');
    await session.query('select pg_stat_force_next_flush()');
    await session.query('select 1');
  } finally {
    await session.release();
  }
}

const kinds = async (store: EventStore, since?: TrailCheckpoint) => {
  const verification = await verifyTrail(store, since ? { since } : { full: true });
  return [...new Set(verification.findings.map((f) => f.kind))].sort();
};

describe.skipIf(!postgres)('damage to the trail, as a superuser who disables the triggers, on real PostgreSQL', () => {
  it("finds an event's data edited, fully and incrementally", async () => {
    const { store, db, s, checkpoint } = await healthy();
    await tamper(db, `update ${s}.events set data = '{"n": 1000}' where stream_id = 'order-1' and stream_version = 2`);
    expect(await kinds(store)).toEqual(['event-altered']);
    expect(await kinds(store, checkpoint)).toEqual(['event-altered', 'rows-deleted-or-updated']);
  });

  it('finds an event deleted from the middle of a stream', async () => {
    const { store, db, s, checkpoint } = await healthy();
    await tamper(db, `delete from ${s}.events where stream_id = 'order-2' and stream_version = 3`);
    expect(await kinds(store)).toEqual(['block-events-changed', 'event-missing']);
    expect(await kinds(store, checkpoint)).toEqual(['block-events-changed', 'event-missing', 'rows-deleted-or-updated']);
  });

  it('finds a whole stream deleted, with its row', async () => {
    const { store, db, s } = await healthy();
    await tamper(db, `delete from ${s}.events where stream_id = 'order-3'; delete from ${s}.streams where stream_id = 'order-3'`);
    expect(await kinds(store)).toEqual(['block-events-changed']);
  });

  it('finds two events of a stream swapped, and two events swapped in the log', async () => {
    const { store, db, s } = await healthy();
    await tamper(db, `update ${s}.events set stream_version = -stream_version where stream_id = 'order-0' and stream_version in (2, 3);
      update ${s}.events set stream_version = case stream_version when -2 then 3 else 2 end where stream_id = 'order-0' and stream_version in (-2, -3)`);
    expect(await kinds(store)).toEqual(['event-altered']);
    const other = await healthy();
    // Positions 2 and 3 (two streams, one block): their places in the log's global order swapped.
    await tamper(other.db, `update ${other.s}.events e set tx_order = o.tx_order from ${other.s}.events o
      where (e.position, o.position) in ((2, 3), (3, 2))`);
    expect(await kinds(other.store)).toEqual(['block-events-changed']);
  });

  it("finds the log's tail cut after a digest was taken, and a block edited", async () => {
    const { store, db, s } = await healthy();
    const digest = (await takeDigest(store))!;
    await tamper(db, `delete from ${s}.events where position > 20; delete from ${s}.trail_blocks where block > 4`);
    const found = await verifyTrail(store, { full: true, digests: [{ digest, source: 'digest.json' }] });
    expect(found.findings.map((f) => f.kind)).toContain('digest-beyond-trail');
    await tamper(db, `update ${s}.trail_blocks set events = events + 1 where block = 2`);
    expect(await kinds(store)).toContain('block-altered');
  });

  it("finds a stream's row whose version was raised, incrementally", async () => {
    const { store, db, s, checkpoint } = await healthy();
    await tamper(db, `update ${s}.streams set version = version + 1 where stream_id = 'order-2'`);
    expect(await kinds(store, checkpoint)).toEqual(['stream-row-altered']);
  });

  it("finds a delete made by replacing the trigger's function for a moment, incrementally", async () => {
    const { store, db, s, checkpoint } = await healthy();
    const session = await db.connect();
    try {
      await session.query('begin');
      await session.query(`create or replace function ${s}.refuse_event_change() returns trigger language plpgsql as $$ begin return old; end $$`);
      await session.query(`delete from ${s}.events where stream_id = 'order-1' and stream_version = 4`);
      await session.query(`create or replace function ${s}.refuse_event_change() returns trigger language plpgsql as $$
        begin raise exception 'events are immutable: % on %.% is refused', tg_op, tg_table_schema, tg_table_name using errcode = 'restrict_violation'; end $$`);
      await session.query('commit');
      await session.query('select pg_stat_force_next_flush()');
      await session.query('select 1');
    } finally {
      await session.release();
    }
    expect(await kinds(store, checkpoint)).toEqual(['block-events-changed', 'event-missing', 'rows-deleted-or-updated']);
  });

  it('finds a careful rewrite with a digest taken before it, and cannot without one', async () => {
    const { store, db, s } = await healthy();
    const digest = (await takeDigest(store))!;
    // Rewrite one event, then every later link of its stream and every block from its own, consistently.
    await tamper(db, `update ${s}.events set data = '{"n": -1}' where stream_id = 'order-1' and stream_version = 2`);
    await tamper(db, `do $$ declare e record; link bytea; begin
        for e in select * from ${s}.events where stream_id = 'order-1' order by stream_version loop
          link := ${s}.event_link(link, e.id, e.stream_id, e.stream_version, e.schema_version, e.occurred_at, e.recorded_at, e.type, e.data, e.metadata);
          update ${s}.events set hash = link where position = e.position;
        end loop;
        update ${s}.streams set head = link where stream_id = 'order-1';
      end $$`);
    const { rows: blocks } = await db.query<{ block: number; first_tx_order: number; first_position: number; last_tx_order: number; last_position: number; events: number }>(
      `select block, first_tx_order, first_position, last_tx_order, last_position, events from ${s}.trail_blocks order by block`);
    let prev = '0'.repeat(64);
    for (const b of blocks) {
      const { rows: links } = await db.query<{ hash: Buffer }>(`select hash from ${s}.events where (tx_order, position) between ($1, $2) and ($3, $4) order by tx_order, position`,
        [b.first_tx_order, b.first_position, b.last_tx_order, b.last_position]);
      const header: BlockHeader = { block: b.block, firstTxOrder: b.first_tx_order, firstPosition: b.first_position, lastTxOrder: b.last_tx_order, lastPosition: b.last_position, events: b.events, root: merkleRoot(links.map((l) => l.hash)).toString('hex'), prev };
      prev = blockHash(header);
      await tamper(db, `update ${s}.trail_blocks set root = decode('${header.root}', 'hex'), prev = decode('${header.prev}', 'hex'), hash = decode('${prev}', 'hex') where block = ${b.block}`);
    }
    // Without a digest, everything is consistent: nothing to find.
    expect(await kinds(store)).toEqual([]);
    const withDigest = await verifyTrail(store, { full: true, digests: [{ digest, source: 'kept-outside.json' }] });
    expect(withDigest.findings.map((f) => [f.kind, f.subject.id])).toEqual([['digest-not-in-chain', 'kept-outside.json']]);
  });

  it("rastro audit reads the digests published to a folder: names the one a cut tail lost, and a file that is not a digest", async () => {
    const { store, db, s } = await healthy();
    const folder = mkdtempSync(join(tmpdir(), 'rastro-digests-'));
    try {
      const early = (await takeDigest(store))!;
      await publishDigest(store, early, { folder });
      for (let i = 0; i < 10; i++) await store.append(`order-${i % 4}`, [{ type: 'order.changed', data: { n: 100 + i } }]);
      while ((await sealNext(db, trailSql(s), 5)) > 0);
      const late = (await takeDigest(store))!;
      expect(late.block).toBeGreaterThan(early.block);
      await publishDigest(store, late, { folder });
      // Another schema's digest and a partial write are not this trail's; a damaged file is.
      writeFileSync(join(folder, `other_${store.schema}-block-1-0123456789abcdef.json`), '{');
      writeFileSync(join(folder, `${store.schema}-block-2-0123456789abcdef.json.77.partial`), '{');
      writeFileSync(join(folder, `${store.schema}-block-1-0123456789abcdef.json`), '{"format": "rastro-digest/1"');
      const audit = (options = {}) => runAudit(store, { checks: ['trail'], full: true, record: false, digests: () => readPublishedDigests(folder, store.schema), ...options });

      const clean = await audit();
      expect(clean.findings.map((f) => [f.kind, f.subject.id])).toEqual([['digest-unreadable', join(folder, `${store.schema}-block-1-0123456789abcdef.json`)]]);
      expect(clean.findings[0]!.detail).toBe('the published digest is not JSON');

      // A failover that lost the last commits, as the promoted standby shows it: the events and blocks after the early digest gone.
      await tamper(db, `delete from ${s}.events where position > ${early.lastPosition}; delete from ${s}.trail_blocks where block > ${early.block}`);
      const lost = await audit();
      const named = lost.findings.filter((f) => f.kind.startsWith('digest-') && f.kind !== 'digest-unreadable');
      expect(named.map((f) => [f.kind, f.subject.id])).toEqual([['digest-beyond-trail', join(folder, `${store.schema}-block-${late.block}-${late.hash.slice(0, 16)}.json`)]]);
      // Only the newest blocks' files are read: the newest one here is the lost digest's.
      expect((await readPublishedDigests(folder, store.schema, 1)).map((d) => d.source)).toEqual([join(folder, `${store.schema}-block-${late.block}-${late.hash.slice(0, 16)}.json`)]);
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  });
});
