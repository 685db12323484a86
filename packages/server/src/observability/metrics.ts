import { collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import type { FigureSample } from 'rastro/internal/observability/figure-sample.js';

/** One value of a gauge read from the database, e.g. `{ name: 'rastro_effects', labels: { state: 'uncertain' }, value: 2 }`. */
export type { FigureSample };

/**
 * The process's Prometheus registry: prom-client's default process metrics, HTTP request
 * durations, and gauges for the figures, set from the samples given at each scrape.
 *
 * @example
 * ```ts
 * const metrics = createMetrics()
 * metrics.observeRequest('GET', '/accounts/:id', 200, 0.004)
 * const text = await metrics.scrape(await readSamples())
 * ```
 */
export function createMetrics(options: { prefix?: string } = {}) {
  const prefix = options.prefix ?? 'rastro_';
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix });
  const requests = new Histogram({
    name: `${prefix}http_request_duration_seconds`,
    help: 'HTTP request durations by method, route pattern and status code',
    labelNames: ['method', 'route', 'status_code'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  const gauges = new Map<string, Gauge>();
  // One child per method, route pattern and status: observing then skips hashing the labels.
  const observers = new Map<string, { observe(seconds: number): void }>();

  function gauge(sample: FigureSample): Gauge {
    let found = gauges.get(sample.name);
    if (!found) {
      found = new Gauge({ name: sample.name, help: sample.help, labelNames: Object.keys(sample.labels ?? {}), registers: [registry] });
      gauges.set(sample.name, found);
    }
    return found;
  }

  return {
    registry,
    contentType: registry.contentType,
    observeRequest(method: string, route: string, statusCode: number, seconds: number): void {
      const key = `${method} ${statusCode} ${route}`;
      let observer = observers.get(key);
      if (!observer) {
        observer = requests.labels({ method, route, status_code: String(statusCode) });
        observers.set(key, observer);
      }
      observer.observe(seconds);
    },
    /** Sets the figure gauges to exactly these samples (label sets not among them are dropped), then renders the registry. */
    async scrape(samples: FigureSample[]): Promise<string> {
      for (const existing of gauges.values()) existing.reset();
      for (const sample of samples) gauge(sample).set(sample.labels ?? {}, sample.value);
      return registry.metrics();
    },
  };
}

export type Metrics = ReturnType<typeof createMetrics>;
