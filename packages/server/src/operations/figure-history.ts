import type { FigureSample } from '../observability/metrics.js';
import { figureSamples, type Figures } from './figures.js';

/** One chart line: a gauge name and label set, with a value (or null) per sample time. */
export interface FigureSeries {
  name: string;
  help: string;
  labels: Record<string, string>;
  values: (number | null)[];
}

export interface FigureTimeline {
  intervalSeconds: number;
  /** Sample times, epoch milliseconds, oldest first. */
  times: number[];
  series: FigureSeries[];
}

export interface FigureHistoryOptions {
  /** @defaultValue 10 000 (10 s) */
  intervalMs?: number;
  /** Samples kept: an hour at the default interval. @defaultValue 360 */
  capacity?: number;
  onError?: (err: unknown) => void;
}

/**
 * Samples the figures every `intervalMs` into a ring buffer held in memory (an hour by default),
 * for the console's charts. Nothing is stored in the database: a restart starts a new hour.
 *
 * @example
 * ```ts
 * const history = figureHistory(() => readFigures({ store }))
 * history.start()
 * const { times, series } = history.timeline()
 * ```
 */
export function figureHistory(read: () => Promise<Figures>, options: FigureHistoryOptions = {}) {
  const intervalMs = options.intervalMs ?? 10_000;
  const capacity = options.capacity ?? 360;
  const ring: { at: number; samples: FigureSample[] }[] = [];
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;

  async function sample(): Promise<void> {
    const figures = await read();
    ring.push({ at: Date.parse(figures.at), samples: figureSamples(figures) });
    if (ring.length > capacity) ring.splice(0, ring.length - capacity);
  }

  const tick = () => {
    running ??= sample().catch((err: unknown) => options.onError?.(err)).finally(() => (running = undefined));
    return running;
  };

  return {
    /** Takes one sample now (also what the timer does). */
    sample: tick,
    start(): void {
      if (timer) return;
      void tick();
      timer = setInterval(() => void tick(), intervalMs);
      timer.unref();
    },
    async stop(): Promise<void> {
      clearInterval(timer);
      timer = undefined;
      await running;
    },
    /** The samples of the last `minutes` (all kept ones by default), one series per gauge and label set. */
    timeline(minutes?: number): FigureTimeline {
      const since = minutes === undefined ? -Infinity : Date.now() - minutes * 60_000;
      const kept = ring.filter((entry) => entry.at >= since);
      const byKey = new Map<string, FigureSeries>();
      // Series in the order of the newest sample, which has every figure of the current state.
      const newest = kept[kept.length - 1];
      for (const sample of newest?.samples ?? []) {
        const labels = sample.labels ?? {};
        byKey.set(`${sample.name}${JSON.stringify(labels)}`, { name: sample.name, help: sample.help, labels, values: new Array<number | null>(kept.length).fill(null) });
      }
      kept.forEach((entry, index) => {
        for (const sample of entry.samples) {
          const labels = sample.labels ?? {};
          const key = `${sample.name}${JSON.stringify(labels)}`;
          let series = byKey.get(key);
          if (!series) byKey.set(key, (series = { name: sample.name, help: sample.help, labels, values: new Array<number | null>(kept.length).fill(null) }));
          series.values[index] = sample.value;
        }
      });
      return { intervalSeconds: intervalMs / 1000, times: kept.map((entry) => entry.at), series: [...byKey.values()] };
    },
  };
}

export type FigureHistory = ReturnType<typeof figureHistory>;
