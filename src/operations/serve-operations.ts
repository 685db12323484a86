import type { FastifyBaseLogger } from 'fastify';
import type { Publisher } from '../brokers/message.js';
import { loadProcessors } from '../cli/load-processors.js';
import type { RastroConfig } from '../config.js';
import type { Processor } from '../processing/processor.js';
import type { Services } from '../server.js';
import { figureHistory } from './figure-history.js';
import { readFigures } from './figures.js';

/**
 * What `serve` runs for the operations API and the console: the processors it can replay (from
 * `--processors` / rastro.config.js, the built-in demo one, and the order normalizer) and the
 * figures sampled every 10 s into an hour of memory.
 */
export async function startOperations(services: Services, config: Pick<RastroConfig, 'processors'>) {
  const processors: Map<string, Processor> = await loadProcessors(config.processors);
  processors.set(services.orders.normalizer.name, services.orders.normalizer);
  let log: FastifyBaseLogger | undefined;
  const history = figureHistory(() => readFigures({ store: services.store, processors, charges: services.charges }), {
    onError: (err) => log?.warn({ error: { message: (err as Error).message } }, 'reading the figures failed'),
  });
  const operations = {
    processors: processors as ReadonlyMap<string, Processor>,
    history,
    /** The relay's publisher, once the relay runs. */
    publisher: undefined as Publisher | undefined,
    start(logger: FastifyBaseLogger): void {
      log = logger;
      history.start();
    },
    stop: () => history.stop(),
  };
  return operations;
}
