import { ValidationError } from '../errors.js';

/** What a run does with one effect type. */
export interface EffectRule {
  /** `apply` calls the provider; `suppress` only counts. */
  mode: 'apply' | 'suppress';
  /**
   * `release`: the provider deduplicates by our key, so a failure frees the reservation and the
   * event is retried. `keep`: it cannot, so a failure after the call may have happened marks the
   * effect `uncertain` for review.
   */
  onFailure: 'release' | 'keep';
}

/** A run's rule per effect type. A type without a rule is suppressed and counted. */
export type EffectPolicy = Readonly<Record<string, EffectRule>>;

/** Checks a policy (for example one read from `--policy policy.json`). */
export function validatePolicy(policy: unknown): EffectPolicy {
  if (typeof policy !== 'object' || policy === null || Array.isArray(policy)) throw new ValidationError('policy', 'must be an object of effect type → rule');
  const checked: Record<string, EffectRule> = {};
  for (const [type, rule] of Object.entries(policy as Record<string, unknown>)) {
    const { mode, onFailure } = (rule ?? {}) as Partial<EffectRule>;
    if (mode !== 'apply' && mode !== 'suppress') throw new ValidationError(`policy.${type}.mode`, "must be 'apply' or 'suppress'");
    if (onFailure !== 'release' && onFailure !== 'keep') throw new ValidationError(`policy.${type}.onFailure`, "must be 'release' or 'keep'");
    checked[type] = Object.freeze({ mode, onFailure });
  }
  return Object.freeze(checked);
}

/** The effect types a policy calls providers for. */
export function appliedTypes(policy: EffectPolicy): string[] {
  return Object.keys(policy).filter((type) => policy[type]!.mode === 'apply');
}
