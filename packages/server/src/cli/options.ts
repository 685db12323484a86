import { Argument, InvalidArgumentError, Option } from 'commander';

/**
 * Options and argument parsers shared by the commands. A parser's message names the option and
 * the value, so the command line can print it as it is (exit code 2).
 */

/** `--limit <n>`, `--days <n>`: a whole number, optionally within a range. */
export function wholeNumber(name: string, { min = 0, max = Number.MAX_SAFE_INTEGER }: { min?: number; max?: number } = {}) {
  return (value: string): number => {
    const n = Number(value);
    if (!/^\d+$/.test(value) || n < min || n > max) {
      const wanted = max === Number.MAX_SAFE_INTEGER ? `a whole number${min > 0 ? ` of at least ${min}` : ''}` : `an integer from ${min} to ${max}`;
      throw new InvalidArgumentError(`${name} must be ${wanted}, got ${JSON.stringify(value)}`);
    }
    return n;
  };
}

/** `--from <ts>`: an ISO 8601 date. */
export function isoDate(name: string) {
  return (value: string): Date => {
    const parsed = new Date(value);
    if (!Number.isFinite(parsed.getTime())) throw new InvalidArgumentError(`${name}: is not a date: ${JSON.stringify(value)} (use ISO 8601, e.g. 2026-10-14T00:00:00Z)`);
    return parsed;
  };
}

/** An option whose value is one of `values`; help shows the choices. */
export function choiceOption<T extends string>(flags: string, description: string, values: readonly T[]): Option {
  const option = new Option(flags, description);
  const name = option.long ?? flags;
  option.argParser((value: string): T => {
    if (!(values as readonly string[]).includes(value)) throw new InvalidArgumentError(`${name} must be one of ${values.join(', ')}, got ${JSON.stringify(value)}`);
    return value as T;
  });
  option.argChoices = [...values];
  return option;
}

/** `--json`: the command prints one JSON document on stdout instead of a table. */
export const jsonOption = () => new Option('--json', 'print one JSON document on stdout instead of a table');

/** `--limit <n>`: how many rows a listing command prints. */
export const limitOption = (fallback: number) => new Option('--limit <n>', 'at most this many rows').argParser(wholeNumber('--limit', { min: 1 })).default(fallback);

/** `--processors <path>`: where processors are loaded from (default ./rastro.config.js or .ts). */
export const processorsOption = () => new Option('--processors <path>', 'load processors from this module (default ./rastro.config.js, .mjs or .ts)');

/** An argument whose value a domain check validates: its message is printed as the misuse. */
export function checkedArgument(name: string, description: string, check: (value: string) => void): Argument {
  return new Argument(name, description).argParser((value: string) => {
    try {
      check(value);
    } catch (err) {
      throw new InvalidArgumentError((err as Error).message);
    }
    return value;
  });
}
