import type { Orders } from 'rastro/internal/intake/orders.js';
import type { Processor } from 'rastro/internal/processing/processor.js';
import { loadProcessors } from './load-processors.js';

/**
 * The processors `serve` runs and acts on, defined once for it and for the commands that act on
 * the same runs (`rastro parked retry|skip`, `rastro audit`): those of `--processors` /
 * rastro.config.js with the built-in demo one ({@link loadProcessors}), and the order normalizer
 * of `services` (its live run is `live:orders`), which sends its alerts where they are configured.
 *
 * @example
 * ```ts
 * const processors = await serveProcessors(services, options.processors)
 * processors.get('orders') // the normalizer
 * ```
 */
export async function serveProcessors(services: { orders: Pick<Orders, 'normalizer'> }, path?: string): Promise<Map<string, Processor>> {
  const processors = await loadProcessors(path);
  processors.set(services.orders.normalizer.name, services.orders.normalizer);
  return processors;
}
