/** Where progress goes: stderr by default, so stdout keeps only the result (and --json stays one document). */
export interface ProgressStream {
  isTTY?: boolean;
  write(text: string): unknown;
}

/** How often the line is redrawn on a terminal, and how often a line is written when piped. */
export interface ProgressOptions {
  stream?: ProgressStream;
  /** @defaultValue 100 */
  terminalEveryMs?: number;
  /** @defaultValue 2000 */
  pipedEveryMs?: number;
}

/**
 * The progress of long work. On a terminal it is one line, redrawn in place; piped, it is a
 * plain line at most every `pipedEveryMs`, and the last state is always written.
 *
 * @example
 * const progress = startProgress();
 * await runReplay(processor, { store, onProgress: ({ done, total }) => progress.count(done, total) });
 * progress.end();
 */
export interface Progress {
  /**
   * The current state as free text (`page 3: 120 snapshots stored`). `force` writes it even when
   * throttled; `state` is what it says apart from changing figures (default the text): piped, a
   * line whose state was just written is not written again.
   */
  show(text: string, options?: { force?: boolean; state?: string }): void;
  /** Counted work: a bar with done of total, the rate and the time left. */
  count(done: number, total: number, unit?: string): void;
  /** A message of its own (a failed batch) on stderr, without breaking the progress line. */
  note(line: string): void;
  /** Finishes the line: the last state stays on the terminal, or is written when piped. */
  end(): void;
}

const CLEAR_LINE = '\r\x1b[2K';

const formatSeconds = (seconds: number) => {
  if (!Number.isFinite(seconds) || seconds < 0) return '?';
  const s = Math.round(seconds);
  return s >= 60 ? `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s` : `${s}s`;
};

/** The text of a counted step: `[#####.....] 50/100 events  1200 events/s  ETA 1s`. */
export function progressBarText(done: number, total: number, elapsedMs: number, unit = 'events'): string {
  const rate = done / Math.max(0.001, elapsedMs / 1000);
  const width = 30;
  const filled = total > 0 ? Math.min(width, Math.round((done / total) * width)) : width;
  return `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${done}/${total} ${unit}  ${Math.round(rate)} ${unit}/s  ETA ${formatSeconds((total - done) / rate)}`;
}

export function startProgress(options: ProgressOptions = {}): Progress {
  const stream = options.stream ?? process.stderr;
  const terminal = stream.isTTY === true;
  const every = terminal ? (options.terminalEveryMs ?? 100) : (options.pipedEveryMs ?? 2000);
  const started = Date.now();
  let lastWrite = 0;
  let latest: string | undefined;
  let written: string | undefined;
  // What a line says apart from its changing figures (a rate): piped, a line that says nothing new is not written.
  let latestState: string | undefined;
  let writtenState: string | undefined;
  let ended = false;

  const write = (text: string, state: string | undefined) => {
    stream.write(terminal ? `${CLEAR_LINE}${text}` : `${text}\n`);
    written = text;
    writtenState = state;
    lastWrite = Date.now();
  };

  const show = (text: string, { force = false, state = text } = {}) => {
    if (ended) return;
    latest = text;
    latestState = state;
    if (!terminal && !force && state === writtenState) return;
    if (force || Date.now() - lastWrite >= every) write(text, state);
  };

  return {
    show,
    count: (done, total, unit) => show(progressBarText(done, total, Date.now() - started, unit), { state: `${done}/${total}` }),
    note(line) {
      if (!terminal || ended || written === undefined) return void stream.write(`${line}\n`);
      stream.write(`${CLEAR_LINE}${line}\n${CLEAR_LINE}${written}`);
    },
    end() {
      if (ended) return;
      const behind = terminal ? latest !== written : latestState !== writtenState;
      if (latest !== undefined && behind) write(latest, latestState);
      if (terminal && written !== undefined) stream.write('\n');
      ended = true;
    },
  };
}

/**
 * For work that runs until stopped (a relay, a live run): shows `status()` every second (a
 * line every `pipedEveryMs` when piped). Returns what stops it and ends the line.
 */
export function showWhileRunning(progress: Progress, status: () => string | undefined): () => void {
  const ticker = setInterval(() => {
    const text = status();
    if (text) progress.show(text);
  }, 1000);
  ticker.unref();
  return () => {
    clearInterval(ticker);
    progress.end();
  };
}
