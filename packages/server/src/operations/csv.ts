/** Characters that make a spreadsheet read a cell as a formula (OWASP, CSV injection). */
const FORMULA_START = /^[=+\-@\t\r]/;

/**
 * One CSV cell: text as it is, objects as JSON, null and undefined empty. A text that a
 * spreadsheet would run as a formula (`=HYPERLINK(…)`, `+1`, `-2+3`, `@SUM(…)`, or starting with
 * a tab or carriage return) is neutralized as OWASP prescribes: prefixed with `'` and quoted.
 * Numbers stay numbers, so `-5` is still a negative amount.
 */
function csvCell(cell: unknown): string {
  if (typeof cell === 'number' || typeof cell === 'bigint') return String(cell);
  const text = cell === null || cell === undefined ? '' : typeof cell === 'object' ? JSON.stringify(cell) : String(cell);
  const safe = FORMULA_START.test(text) ? `'${text}` : text;
  return safe !== text || /[",\n\r]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
}

/**
 * RFC 4180 CSV, safe to open in a spreadsheet: every CSV rastro writes (the replay diff on the
 * command line and at `/ops/runs/{runId}/diff.csv`) goes through it.
 *
 * @example
 * ```ts
 * csv(['key', 'note'], [['k1', '=1+1']])   // 'key,note\r\nk1,"\'=1+1"'
 * ```
 */
export function csv(headers: string[], rows: unknown[][]): string {
  return [headers, ...rows].map((row) => row.map(csvCell).join(',')).join('\r\n');
}
