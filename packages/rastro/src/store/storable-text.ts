/**
 * Text PostgreSQL cannot store: U+0000 (neither `text` nor `jsonb` holds it) and a lone UTF-16
 * surrogate (`jsonb` refuses its `\uD800` escape, and it has no UTF-8 form). Every other
 * character, control characters included, is stored and returned as it was sent.
 */
export interface UnstorableText {
  /** Where it is, as the caller wrote it: `owner`, `payload.items[2].name`, `meta["a b"]`. */
  field: string;
  /** What is wrong with it, for a message: `contains U+0000 (NUL)`. */
  reason: string;
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$-]*$/;

/** Why a string cannot be stored, or undefined when it can. */
export function unstorableReason(text: string): string | undefined {
  if (text.includes('\u0000')) return 'contains U+0000 (NUL), which the database cannot store';
  const at = text.search(LONE_SURROGATE);
  if (at >= 0) {
    const unit = text.charCodeAt(at).toString(16).toUpperCase();
    return `contains a lone UTF-16 surrogate (\\u${unit}), which is not a character and cannot be stored`;
  }
  return undefined;
}

interface Step {
  value: unknown;
  parent: Step | undefined;
  /** The key or index that leads from the parent to this value. */
  key: string | number | undefined;
}

function pathOf(step: Step, base: string): string {
  const parts: string[] = [];
  for (let at: Step | undefined = step; at?.key !== undefined; at = at.parent) {
    parts.push(typeof at.key === 'number' ? `[${at.key}]` : IDENTIFIER.test(at.key) ? `.${at.key}` : `[${JSON.stringify(at.key)}]`);
  }
  const path = base + parts.reverse().join('');
  return path.startsWith('.') ? path.slice(1) : path;
}

/**
 * The first string (value or object key) in `value` that the database cannot store, to any
 * depth, without recursion (a body may nest thousands of arrays). `base` prefixes the field.
 *
 * @example
 * ```ts
 * findUnstorableText({ owner: 'a\u0000' })  // { field: 'owner', reason: 'contains U+0000 …' }
 * ```
 */
export function findUnstorableText(value: unknown, base = ''): UnstorableText | undefined {
  const stack: Step[] = [{ value, parent: undefined, key: undefined }];
  while (stack.length > 0) {
    const step = stack.pop()!;
    const current = step.value;
    if (typeof current === 'string') {
      const reason = unstorableReason(current);
      if (reason) return { field: pathOf(step, base) || base || 'body', reason };
    } else if (Array.isArray(current)) {
      for (let index = current.length - 1; index >= 0; index--) stack.push({ value: current[index], parent: step, key: index });
    } else if (typeof current === 'object' && current !== null) {
      const keys = Object.keys(current);
      for (const key of keys) {
        const reason = unstorableReason(key);
        if (reason) return { field: pathOf({ value: undefined, parent: step, key }, base), reason: `is a key that ${reason}` };
      }
      for (let index = keys.length - 1; index >= 0; index--) {
        const key = keys[index]!;
        stack.push({ value: (current as Record<string, unknown>)[key], parent: step, key });
      }
    }
  }
  return undefined;
}
