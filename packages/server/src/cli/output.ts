/** Prints rows as an aligned text table. */
export function table(headers: string[], rows: unknown[][]): string {
  const cells = [headers, ...rows.map((row) => row.map((cell) => (cell === null || cell === undefined ? '' : typeof cell === 'object' ? JSON.stringify(cell) : String(cell))))];
  const widths = headers.map((_, i) => Math.max(...cells.map((row) => row[i]!.length)));
  const line = (row: string[]) => row.map((cell, i) => cell.padEnd(widths[i]!)).join('  ').trimEnd();
  return [line(cells[0]!), widths.map((w) => '-'.repeat(w)).join('  '), ...cells.slice(1).map(line)].join('\n');
}

/** Prints `value` as one JSON document on stdout: what every `--json` prints. */
export function printJson(value: unknown): void {
  console.log(JSON.stringify(value, null, 2));
}

/** How a listing command shows its rows as a table. */
export interface TableView<T> {
  headers: string[];
  row(item: T): unknown[];
  /** Printed instead of an empty table. */
  empty: string;
}

/** Prints a listing: the items as a JSON array with `--json`, else a table. */
export function printList<T>(items: T[], options: { json?: boolean }, view: TableView<T>): void {
  if (options.json) return printJson(items);
  console.log(items.length === 0 ? view.empty : table(view.headers, items.map((item) => view.row(item))));
}

/** A run's counters (`applied 4`, `parked 1`) as a table. */
export const counterTable = (counters: Record<string, number>): string => table(['counter', 'value'], Object.entries(counters));
