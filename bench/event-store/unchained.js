// rastro with the trail's chain turned off, in its own schema: event_chain and event_link replaced
// by functions that link nothing, so its appends are rastro's same statements without the
// hashing. What the chain costs is rastro against this.
import { runContender } from '../shared/contender.js';
import { openRastro } from './open-rastro.js';
import { runEventStoreWorkload } from './workload.js';

const unchain = async (db, schema) => {
  await db.query(`create or replace function ${schema}.event_chain(prev bytea, stream_id text, first_version bigint, ids uuid[], types text[],
    data jsonb[], metadata jsonb[], occurred_at timestamptz[], schema_versions smallint[], recorded_at timestamptz) returns bytea[]
  language sql immutable as $$ select array_fill(null::bytea, array[cardinality(ids)]) $$`);
  await db.query(`create or replace function ${schema}.event_link(prev bytea, id uuid, stream_id text, stream_version bigint, schema_version smallint,
    occurred_at timestamptz, recorded_at timestamptz, type text, data jsonb, metadata jsonb) returns bytea
  language sql immutable as $$ select null::bytea $$`);
};

await runContender(async (run) => runEventStoreWorkload(await openRastro(run, 'unchained', unchain)));
