import type { AuditOptions } from 'rastro/internal/audit/run-audit.js';
import { acquirerClient } from 'rastro/internal/charges/acquirer.js';
import type { Charges } from 'rastro/internal/charges/charges.js';
import { openBrokerRecords } from '../brokers/open-broker.js';
import type { RastroConfig } from '../config.js';
import type { EffectTypes } from 'rastro/internal/processing/ledger/effect-type.js';
import type { Processor } from 'rastro/internal/processing/processor.js';
import { handledTypes } from 'rastro/internal/processing/read-batch.js';
import { RETENTION_INTERVAL_MS } from 'rastro/internal/outbox/retention.js';
import { readPublishedDigests } from 'rastro/internal/trail/publish-digest.js';
import { digestKeys } from './trail-loops.js';

/** The acquirer's captures since a time, the whole listing within ten of the acquirer call's timeouts. */
function listCaptures(url: string, timeoutMs: number): AuditOptions['listCaptures'] {
  const acquirer = acquirerClient(url);
  return (since) => ({
    [Symbol.asyncIterator]: () => acquirer.listCaptures!(since, { signal: AbortSignal.timeout(timeoutMs * 10) })[Symbol.asyncIterator](),
  });
}

/**
 * The audit's settings as a deployment configures them: the charge deadline and outbox
 * retention it checks against, the event types of the processors this process knows (for
 * silent stops), and, for `--ask-providers`, the effect types that can ask their provider, the
 * acquirer's list of captures and the broker's stored messages; for the trail, the digests
 * serve published to a folder (RASTRO_DIGEST_PUBLISH) and the key they are signed with.
 */
export function auditSettings(
  config: Pick<RastroConfig, 'chargeDeadlineSeconds' | 'outboxRetentionDays'> & Partial<Pick<RastroConfig, 'acquirerUrl' | 'acquirerTimeoutMs' | 'brokerUrl' | 'natsStream' | 'schema' | 'digestPublish' | 'digestKeyFile' | 'digestPublicKeyFile'>>,
  processors: ReadonlyMap<string, Processor>,
  charges: Charges,
  inboxDurable?: string,
): Pick<AuditOptions, 'typesOf' | 'chargeDeadlineMs' | 'outboxRetentionDays' | 'retentionIntervalMs' | 'effectTypes' | 'listCaptures' | 'listBrokerMessages' | 'digests' | 'digestPublicKey'> {
  const effectTypes: Record<string, EffectTypes[string]> = charges.canCreate ? { ...charges.effectTypes } : {};
  for (const processor of processors.values()) Object.assign(effectTypes, processor.effects ?? {});
  const folder = typeof config.digestPublish === 'object' ? config.digestPublish.folder : undefined;
  return {
    typesOf: (name) => {
      const processor = processors.get(name);
      return processor ? handledTypes(processor) : null;
    },
    chargeDeadlineMs: config.chargeDeadlineSeconds * 1000,
    outboxRetentionDays: config.outboxRetentionDays,
    retentionIntervalMs: RETENTION_INTERVAL_MS,
    effectTypes,
    listCaptures: config.acquirerUrl ? listCaptures(config.acquirerUrl, config.acquirerTimeoutMs ?? 10_000) : undefined,
    listBrokerMessages: config.brokerUrl && config.natsStream ? openBrokerRecords({ brokerUrl: config.brokerUrl, natsStream: config.natsStream }, inboxDurable) : undefined,
    digests: folder && config.schema ? () => readPublishedDigests(folder, config.schema!) : undefined,
    digestPublicKey: digestKeys(config).trusted,
  };
}
