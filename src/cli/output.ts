/** Prints rows as an aligned text table. */
export function table(headers: string[], rows: unknown[][]): string {
  const cells = [headers, ...rows.map((row) => row.map((cell) => (cell === null || cell === undefined ? '' : typeof cell === 'object' ? JSON.stringify(cell) : String(cell))))];
  const widths = headers.map((_, i) => Math.max(...cells.map((row) => row[i]!.length)));
  const line = (row: string[]) => row.map((cell, i) => cell.padEnd(widths[i]!)).join('  ').trimEnd();
  return [line(cells[0]!), widths.map((w) => '-'.repeat(w)).join('  '), ...cells.slice(1).map(line)].join('\n');
}

/** RFC 4180 CSV. */
export function csv(headers: string[], rows: unknown[][]): string {
  const quote = (cell: unknown) => {
    const text = cell === null || cell === undefined ? '' : typeof cell === 'object' ? JSON.stringify(cell) : String(cell);
    return /[",\n\r]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
  };
  return [headers, ...rows].map((row) => row.map(quote).join(',')).join('\r\n');
}

const formatSeconds = (seconds: number) => {
  if (!Number.isFinite(seconds)) return '?';
  const s = Math.round(seconds);
  return s >= 60 ? `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s` : `${s}s`;
};

/** A progress line: done of total, events/s, ETA. Redrawn in place on a terminal. */
export function progressBar(stream: NodeJS.WriteStream = process.stderr) {
  const started = Date.now();
  let lastDraw = 0;
  return {
    update(done: number, total: number, force = false): void {
      const now = Date.now();
      if (!force && now - lastDraw < (stream.isTTY ? 100 : 2000)) return;
      lastDraw = now;
      const rate = done / Math.max(0.001, (now - started) / 1000);
      const width = 30;
      const filled = total > 0 ? Math.min(width, Math.round((done / total) * width)) : width;
      const text = `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${done}/${total} events  ${Math.round(rate)} events/s  ETA ${formatSeconds((total - done) / rate)}`;
      stream.write(stream.isTTY ? `\r${text}` : `${text}\n`);
    },
    finish(): void {
      if (stream.isTTY) stream.write('\n');
    },
  };
}
