import type { FastifyBaseLogger } from 'fastify';
import type { Publisher } from 'rastro/internal/brokers/message.js';
import type { RastroConfig } from '../config.js';
import type { Processor } from 'rastro/internal/processing/processor.js';
import type { Services } from '../server.js';
import { auditSettings } from './audit-settings.js';
import { startAuditSchedule } from './audit-schedule.js';
import { figureHistory } from './figure-history.js';
import { readFigures } from './figures.js';
import { serveProcessors } from './serve-processors.js';

/**
 * What `serve` runs for the operations API and the console: the processors it can replay and
 * retry parked events of ({@link serveProcessors}) and the
 * figures sampled every 10 s into an hour of memory.
 */
export async function startOperations(services: Services, config: Pick<RastroConfig, 'processors'> & Partial<Pick<RastroConfig, 'auditIntervalSeconds' | 'chargeDeadlineSeconds' | 'outboxRetentionDays' | 'schema' | 'digestPublish' | 'digestKeyFile' | 'digestPublicKeyFile'>>) {
  const processors: Map<string, Processor> = await serveProcessors(services, config.processors);
  let log: FastifyBaseLogger | undefined;
  let stopAudits: () => Promise<void> = async () => undefined;
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
      stopAudits = startAudits(services, config, processors, logger);
    },
    async stop() {
      await Promise.all([history.stop(), stopAudits()]);
    },
  };
  return operations;
}

/** serve's audits every RASTRO_AUDIT_INTERVAL_SECONDS (none when 0), their findings logged as a warning. */
function startAudits(services: Services, config: Partial<Pick<RastroConfig, 'auditIntervalSeconds' | 'chargeDeadlineSeconds' | 'outboxRetentionDays' | 'schema' | 'digestPublish' | 'digestKeyFile' | 'digestPublicKeyFile'>>, processors: ReadonlyMap<string, Processor>, log: FastifyBaseLogger) {
  if (!config.auditIntervalSeconds) return async () => undefined;
  return startAuditSchedule(services.store, {
    intervalSeconds: config.auditIntervalSeconds,
    settings: auditSettings({ ...config, chargeDeadlineSeconds: config.chargeDeadlineSeconds ?? 120, outboxRetentionDays: config.outboxRetentionDays ?? 7 }, processors, services.charges),
    onAudit: (report) => {
      if (report.clean) log.info({ audit: report.id }, 'audit: clean');
      else log.warn({ audit: report.id, findings: report.findings.length, checks: report.checks.filter((c) => c.findings > 0).map((c) => c.name) }, 'audit found something: see GET /ops/audit');
    },
    onError: (err) => log.warn({ error: { message: (err as Error).message } }, 'audit failed; trying again at the next interval'),
  });
}
