/**
 * Ids in key order, a page at a time: `fetch(after)` returns up to `size` ids after `after`.
 * Each page is its own statement, so no transaction stays open across a whole table.
 */
export async function* keysetPages(fetch: (after: string) => Promise<string[]>, first: string, size: number): AsyncGenerator<string[]> {
  let after = first;
  for (;;) {
    const ids = await fetch(after);
    if (ids.length > 0) yield ids;
    if (ids.length < size) return;
    after = ids[ids.length - 1]!;
  }
}

/** `items` in slices of `size`. */
export function* slices<T>(items: readonly T[], size: number): Generator<T[]> {
  for (let i = 0; i < items.length; i += size) yield items.slice(i, i + size);
}
