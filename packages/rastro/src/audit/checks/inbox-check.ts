import type { AuditCheck } from '../finding.js';

/** Dead letters listed per audit, oldest first; the count covers them all. */
const LISTED = 1000;

function inboxSql(s: string) {
  return {
    // Only the columns every version of the table has: the body's type is the inbox's business.
    deadLetters: `select id::text as id, broker, source, message_id, reason, extract(epoch from now() - received_at)::float8 as age
      from ${s}.inbox_dead_letters order by id limit $1`,
    count: `select count(*)::bigint as n from ${s}.inbox_dead_letters`,
  } as const;
}

/** The inbox: the messages it could not store, kept as dead letters with their reason. */
export const inboxCheck: AuditCheck = {
  name: 'inbox',
  summary: 'dead letters: messages the inbox could not store, with the reason',
  async run(ctx) {
    const sql = inboxSql(ctx.s);
    const { rows } = await ctx.db.query<{ id: string; broker: string; source: string; message_id: string | null; reason: string; age: number }>(sql.deadLetters, [LISTED]);
    const total = Number((await ctx.db.query<{ n: number }>(sql.count)).rows[0]?.n ?? 0);
    ctx.progress(total);
    return {
      examined: total,
      memory: {},
      findings: rows.map((row) => ({
        check: 'inbox', kind: 'dead-letter', subject: { type: 'dead-letter' as const, id: row.id },
        detail: `from ${row.broker} ${row.source}${row.message_id ? ` (message ${row.message_id})` : ''}: ${row.reason.slice(0, 300)}`,
        action: 'rastro inbox dead-letters shows it; fix the sender, then republish it with a proper id or delete the row',
        ageSeconds: Number(row.age),
      })),
    };
  },
};
