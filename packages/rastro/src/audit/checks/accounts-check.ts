import type { Queryable } from '../../db/database.js';
import { ACCOUNT_STREAM_PREFIX, foldAccount, type AccountState } from '../../accounts/account.js';
import { sameJson } from '../../processing/state-writes.js';
import { keysetPages } from '../keyset-pages.js';
import { changedSince, foundSubjects, rememberedSubjects, type AuditCheck, type Finding } from '../finding.js';

/** Snapshots folded per statement. */
const SNAPSHOTS_PER_CHUNK = 1000;

function accountsSql(s: string) {
  return {
    /** Account snapshots written since the last audit ($1..$3), or found wrong then ($4), in key order after $5. */
    page: `select sn.stream_id from ${s}.snapshots sn
      where starts_with(sn.stream_id, '${ACCOUNT_STREAM_PREFIX}') and sn.stream_id > $5
        and (${changedSince('sn', 1, 'taken_at')} or sn.stream_id = any($4::text[]))
      order by sn.stream_id limit ${SNAPSHOTS_PER_CHUNK}`,
    /** The snapshots of $1 and the events up to each one's version: what a fold needs. */
    history: `select sn.stream_id, sn.version, sn.state, e.stream_version, e.type, e.data, e.occurred_at
      from ${s}.snapshots sn left join ${s}.events e on e.stream_id = sn.stream_id and e.stream_version <= sn.version
      where sn.stream_id = any($1::text[]) order by sn.stream_id, e.stream_version`,
  } as const;
}

interface HistoryRow {
  stream_id: string;
  version: number;
  state: AccountState;
  stream_version: number | null;
  type: string | null;
  data: Record<string, unknown> | null;
  occurred_at: Date | null;
}

async function examineChunk(q: Queryable, sql: ReturnType<typeof accountsSql>, streamIds: string[]): Promise<Finding[]> {
  const { rows } = await q.query<HistoryRow>(sql.history, [streamIds]);
  const byStream = new Map<string, HistoryRow[]>();
  for (const row of rows) (byStream.get(row.stream_id) ?? byStream.set(row.stream_id, []).get(row.stream_id)!).push(row);
  const findings: Finding[] = [];
  for (const [streamId, history] of byStream) {
    const accountId = streamId.slice(ACCOUNT_STREAM_PREFIX.length);
    const events = history.filter((row) => row.stream_version !== null)
      .map((row) => ({ streamVersion: Number(row.stream_version), type: row.type!, data: row.data!, occurredAt: row.occurred_at! }));
    // The account ledger's own fold, from no snapshot: what the snapshot must have cached.
    const folded = foldAccount(accountId, null, events);
    const snapshot = history[0]!;
    const subject = { type: 'account' as const, id: accountId };
    const action = 'rastro snapshots rebuild (snapshots are a cache, rebuilt from the events), then find what wrote it';
    if (!folded || folded.version !== Number(snapshot.version)) {
      findings.push({ check: 'accounts', kind: 'snapshot-past-events', subject, detail: `the snapshot is at version ${snapshot.version}, but the stream's events reach only ${folded?.version ?? 0}`, action });
      continue;
    }
    const expected: AccountState = { owner: folded.owner, createdAt: folded.createdAt, balance: folded.balance };
    if (!sameJson(snapshot.state, expected)) {
      const fields = (Object.keys(expected) as (keyof AccountState)[]).filter((field) => !sameJson(snapshot.state?.[field], expected[field]));
      findings.push({ check: 'accounts', kind: 'snapshot-differs', subject, detail: `the snapshot at version ${snapshot.version} differs from the fold of its events in ${fields.join(', ') || 'its shape'} (balance ${snapshot.state?.balance} stored, ${expected.balance} folded)`, action });
    }
  }
  return findings;
}

/**
 * Accounts: every account snapshot equals the fold of its events up to its version (the
 * account ledger's `foldAccount`), for the snapshots written since the last audit.
 */
export const accountsCheck: AuditCheck = {
  name: 'accounts',
  summary: 'every account snapshot equals the fold of its events up to its version',
  async run(ctx) {
    const sql = accountsSql(ctx.s);
    const findings: Finding[] = [];
    const remembered = rememberedSubjects(ctx.memory).map((id) => `${ACCOUNT_STREAM_PREFIX}${id}`);
    let examined = 0;
    const page = async (after: string) => (await ctx.db.query<{ stream_id: string }>(sql.page, [...ctx.scope.changed, remembered, after])).rows.map((r) => r.stream_id);
    for await (const ids of keysetPages(page, '', SNAPSHOTS_PER_CHUNK)) {
      findings.push(...(await examineChunk(ctx.db, sql, ids)));
      ctx.progress((examined += ids.length));
    }
    return { findings, examined, memory: { found: foundSubjects(findings) } };
  },
};
