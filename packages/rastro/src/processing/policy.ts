import { ValidationError } from '../errors.js';
import type { Processor } from './processor.js';

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

/**
 * A run's rule per effect type. For a processor that declares its effect types, a rule for each
 * of them and for nothing else; for one that does not, a type without a rule is suppressed and
 * counted.
 */
export type EffectPolicy<Effect extends string = string> = Readonly<Record<Effect, EffectRule>>;

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

/**
 * The policy a run of `processor` uses, checked before it reads an event. For a processor that
 * declares its effect types, a key that names none of them (a typo) and a declared type with no
 * rule are refused: either would suppress an effect without a word.
 */
export function policyFor(processor: Pick<Processor, 'name' | 'effectTypes'>, policy: unknown): EffectPolicy {
  const checked = validatePolicy(policy);
  const declared = processor.effectTypes;
  if (declared === undefined) return checked;
  for (const type of Object.keys(checked)) {
    if (!declared.includes(type)) {
      throw new ValidationError(`policy.${type}`, `names no effect type of processor ${processor.name}; its effect types are ${declared.length > 0 ? declared.join(', ') : 'none'}`);
    }
  }
  const missing = declared.filter((type) => !Object.hasOwn(checked, type));
  if (missing.length > 0) {
    throw new ValidationError(`policy.${missing[0]}`, `is missing: processor ${processor.name} asks for ${missing.join(', ')}; give each a rule ({ mode: 'apply' | 'suppress', onFailure: 'release' | 'keep' })`);
  }
  return checked;
}
