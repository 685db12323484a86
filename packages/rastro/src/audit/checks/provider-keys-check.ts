import type { EffectTypes } from '../../processing/ledger/effect-type.js';
import type { AuditCheck, Finding } from '../finding.js';
import { missingKeys } from './keys-missing.js';

export interface ProviderKeysCheckOptions {
  /** Effect types; those with `listKeys` are asked. */
  types: EffectTypes;
  /** The start of the window the providers are asked about. */
  since: Date;
}

const missingSql = (s: string) => `select k.key from unnest($1::text[]) k(key) where not exists (select 1 from ${s}.effects f where f.key = k.key)`;

/**
 * Provider keys (only with `--ask-providers`): asks each effect type that can list its
 * provider's keys (`listKeys`) for those seen since the window's start, and reports each key the
 * effect ledger lacks: an effect that happened and whose record is gone.
 */
export function providerKeysCheck(options: ProviderKeysCheckOptions): AuditCheck {
  return {
    name: 'provider-keys',
    summary: 'lists the keys providers have seen (effect types that can list) and reports each the ledger lacks',
    async run(ctx) {
      const findings: Finding[] = [];
      let examined = 0;
      for (const [type, effectType] of Object.entries(options.types)) {
        if (!effectType.listKeys) continue;
        for await (const batch of missingKeys(ctx.db, effectType.listKeys(options.since), (key) => key, missingSql(ctx.s))) {
          examined += batch.examined;
          ctx.progress(examined);
          findings.push(...batch.missing.map((key): Finding => ({
            check: 'provider-keys', kind: 'provider-key-not-in-ledger', subject: { type: 'effect', id: key },
            detail: `the provider of ${type} has seen ${key}, and the effect ledger has no entry for it: its record was lost (a failover's lost tail, a restore)`,
            action: 'do not perform it again by hand: if its event is in the log, its run performs it again with this key, which the provider must deduplicate; if the event is gone, restore the fact it stood for or compensate at the provider',
          })));
        }
      }
      return { findings, examined, memory: {}, figures: { listed: examined } };
    },
  };
}
