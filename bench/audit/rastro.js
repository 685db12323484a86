// rastro: a full audit of the largest deployment (after a first, recorded one that also warms
// up), then per history size the median of three incremental audits, each after 10,000 new events.
import { runAudit } from 'rastro';
import { median } from '../shared/measure.js';
import { runContender } from '../shared/contender.js';
import { AUDIT, openDeployment, sizeKey } from './workload.js';

async function audited(store, options) {
  const started = performance.now();
  const report = await runAudit(store, options);
  const ms = performance.now() - started;
  if (!report.clean) throw new Error(`the audit of a sound deployment found ${report.findings.length}: ${JSON.stringify(report.findings.slice(0, 3))}`);
  return { ms, report };
}

await runContender(async () => {
  const results = {};
  for (const size of AUDIT.sizes) {
    const deployment = await openDeployment('bench_audit_rastro', size);
    try {
      await audited(deployment.store, { full: true });
      if (size === AUDIT.sizes.at(-1)) {
        const { ms, report } = await audited(deployment.store, { full: true, record: false });
        const rows = (await deployment.db.query(`select ${deployment.tables.map((t) => `(select count(*) from "${deployment.schema}".${t})`).join(' + ')} as n`)).rows[0].n;
        results.full = Number(rows) / (ms / 1000);
        results.fullMs = ms;
        results.examined = report.checks.reduce((sum, check) => sum + check.examined, 0);
      }
      const times = [];
      for (let round = 0; round < 3; round++) {
        await deployment.addEvents();
        times.push((await audited(deployment.store, {})).ms);
      }
      results[`incremental${sizeKey(size)}`] = median(times);
    } finally {
      await deployment.close();
    }
  }
  return results;
});
