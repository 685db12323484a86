import type { AuditCheck, Finding } from '../finding.js';
import { missingKeys } from './keys-missing.js';

/** A message as the broker holds it: its id (the outbox row's or the event's), where, and when it was stored. */
export interface BrokerRecord {
  id: string;
  subject: string;
  storedAt: Date;
  /** The inbox acknowledged it (it consumes this stream): the log should hold it. */
  acknowledged?: boolean;
}

export interface BrokerCheckOptions {
  /** The broker's messages since a time (a JetStream stream can be read back; a RabbitMQ queue cannot). */
  listMessages?: (since: Date) => AsyncIterable<BrokerRecord>;
  /** The start of the window the broker is read from. */
  since: Date;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

// An id is accounted for by an outbox row or an event of that id (a relay from the log, or the
// inbox storing the message back). One hash anti-join per batch: the outbox has no index on id.
const missingSql = (s: string) => `select k.key::text as key from unnest($1::uuid[]) k(key)
  where not exists (select 1 from ${s}.outbox o where o.id = k.key)
    and not exists (select 1 from ${s}.events e where e.id = k.key)`;

// The inbox stores a message as the event of its id (a UUID id is the event id) or as a dead letter.
const unstoredSql = (s: string) => `select k.key::text as key from unnest($1::uuid[]) k(key)
  where not exists (select 1 from ${s}.events e where e.id = k.key)
    and not exists (select 1 from ${s}.inbox_dead_letters d where d.message_id = k.key::text)`;

const age = (m: BrokerRecord) => Math.max(0, (Date.now() - m.storedAt.getTime()) / 1000);

const withoutRow = (m: BrokerRecord): Finding => ({
  check: 'broker', kind: 'message-without-row', subject: { type: 'message', id: m.id },
  detail: `the broker holds message ${m.id} (${m.subject}, stored ${m.storedAt.toISOString()}), and neither the outbox nor the log has it: the transaction that wrote it was lost (a failover's lost tail, a restore)`,
  action: 'its consumers acted on it: do not publish it again; restore the fact it announced (write it again with the same meaning) or tell its consumers to compensate',
  ageSeconds: age(m),
});

const notStored = (m: BrokerRecord): Finding => ({
  check: 'broker', kind: 'acknowledged-not-stored', subject: { type: 'message', id: m.id },
  detail: `the inbox acknowledged message ${m.id} (${m.subject}, stored ${m.storedAt.toISOString()}), and the log has neither its event nor a dead letter: the transaction that stored it was lost (a failover's lost tail, a restore), and the broker will not deliver it again`,
  action: 'deliver it to the inbox again, which stores it once (set the inbox durable back to before it); its processors take it from there',
  ageSeconds: age(m),
});

/**
 * Broker (only with `--ask-providers`): reads the messages the broker stored since the window's
 * start and reports each whose outbox row or event the database lacks: a message its consumers
 * received for a fact the log no longer has; and, of those the inbox acknowledged, each the log
 * does not hold: a message the inbox took that the database lost. Ids that are not UUIDs are not
 * rastro's and are left out.
 */
export function brokerCheck(options: BrokerCheckOptions): AuditCheck {
  return {
    name: 'broker',
    summary: 'reads the messages the broker stored and reports each whose outbox row or event the log lacks',
    async run(ctx) {
      if (!options.listMessages) return { findings: [], examined: 0, memory: {}, figures: { listed: null } };
      const ours = async function* (records: AsyncIterable<BrokerRecord>) {
        for await (const record of records) if (UUID.test(record.id)) yield { ...record, id: record.id.toLowerCase() };
      };
      const findings: Finding[] = [];
      let examined = 0;
      for await (const { missing, batch, examined: n } of missingKeys(ctx.db, ours(options.listMessages(options.since)), (m) => m.id, missingSql(ctx.s))) {
        examined += n;
        ctx.progress(examined);
        findings.push(...missing.map(withoutRow));
        // Of the rest, those the inbox acknowledged must be in the log.
        const without = new Set(missing.map((m) => m.id));
        const acknowledged = batch.filter((m) => m.acknowledged && !without.has(m.id));
        if (acknowledged.length === 0) continue;
        const { rows } = await ctx.db.query<{ key: string }>(unstoredSql(ctx.s), [acknowledged.map((m) => m.id)]);
        const unstored = new Set(rows.map((row) => row.key));
        findings.push(...acknowledged.filter((m) => unstored.has(m.id)).map(notStored));
      }
      return { findings, examined, memory: {}, figures: { listed: examined } };
    },
  };
}
