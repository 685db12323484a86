import type { AuditOptions } from 'rastro/internal/audit/run-audit.js';
import type { Charges } from 'rastro/internal/charges/charges.js';
import type { RastroConfig } from '../config.js';
import type { EffectTypes } from 'rastro/internal/processing/ledger/effect-type.js';
import type { Processor } from 'rastro/internal/processing/processor.js';
import { handledTypes } from 'rastro/internal/processing/read-batch.js';
import { RETENTION_INTERVAL_MS } from 'rastro/internal/outbox/retention.js';

/**
 * The audit's settings as a deployment configures them: the charge deadline and outbox
 * retention it checks against, the event types of the processors this process knows (for
 * silent stops), and the effect types that can ask their provider (for `--ask-providers`).
 */
export function auditSettings(
  config: Pick<RastroConfig, 'chargeDeadlineSeconds' | 'outboxRetentionDays'>,
  processors: ReadonlyMap<string, Processor>,
  charges: Charges,
): Pick<AuditOptions, 'typesOf' | 'chargeDeadlineMs' | 'outboxRetentionDays' | 'retentionIntervalMs' | 'effectTypes'> {
  const effectTypes: Record<string, EffectTypes[string]> = charges.canCreate ? { ...charges.effectTypes } : {};
  for (const processor of processors.values()) Object.assign(effectTypes, processor.effects ?? {});
  return {
    typesOf: (name) => {
      const processor = processors.get(name);
      return processor ? handledTypes(processor) : null;
    },
    chargeDeadlineMs: config.chargeDeadlineSeconds * 1000,
    outboxRetentionDays: config.outboxRetentionDays,
    retentionIntervalMs: RETENTION_INTERVAL_MS,
    effectTypes,
  };
}
