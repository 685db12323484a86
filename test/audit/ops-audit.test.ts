import { describe, expect, it } from 'vitest';
import { buildApp } from '../../packages/server/src/http/app.js';
import { startServer } from '../../packages/server/src/server.js';
import { backends, DATABASE_URL, schemaName } from '../support/databases.js';
import { auditWorld } from '../support/audit-world.js';
import { eventually } from '../support/eventually.js';

describe.each(backends())('the audit in the operations API ($name)', (backend) => {
  it('shows the latest audit at GET /ops/audit and in /metrics, with the last clean one', async () => {
    const world = await auditWorld(backend);
    const app = await buildApp({ ...world });
    const before = await app.inject({ url: '/ops/audit' });
    expect(before.statusCode).toBe(200);
    expect(before.json()).toEqual({ audit: null, lastCleanAt: null });
    const clean = await world.audit();
    await world.sql(`update {s}.snapshots set state = jsonb_set(state, '{owner}', '"Eve"') where stream_id = $1`, [`account-${world.ids.account}`]);
    await world.audit();
    const body = (await app.inject({ url: '/ops/audit' })).json();
    expect(body.lastCleanAt).toBe(clean.finishedAt.toISOString());
    expect(body.audit).toMatchObject({ complete: true, full: false, findings: [{ check: 'accounts', kind: 'snapshot-differs', subject: { type: 'account', id: world.ids.account } }] });
    expect(body.audit.checks.map((c: { name: string }) => c.name)).toContain('orders');
    const metrics = (await app.inject({ url: '/metrics' })).body;
    expect(metrics).toContain('rastro_audit_findings{check="accounts"} 1');
    expect(metrics).toContain('rastro_audit_findings{check="log"} 0');
    expect(metrics).toContain(`rastro_audit_last_clean_timestamp_seconds ${clean.finishedAt.getTime() / 1000}`);
    expect((await app.inject({ url: '/console/audit.js' })).statusCode).toBe(200);
    await app.close();
  });
});

describe('serve', () => {
  it('audits every RASTRO_AUDIT_INTERVAL_SECONDS', async () => {
    const server = await startServer({
      port: 0, logLevel: 'silent', relay: false, auditIntervalSeconds: 1, schema: schemaName(),
      ...(DATABASE_URL ? { databaseUrl: DATABASE_URL } : { dataDir: 'memory://' }),
    });
    try {
      await server.store.append('note-1', [{ type: 'note.added', data: {} }]);
      const audits = await eventually(async () => {
        const { audit } = (await server.app.inject({ url: '/ops/audit' })).json();
        return audit && audit.id >= 2 ? audit : undefined;
      }, 'two audits');
      expect(audits.findings).toEqual([]);
    } finally {
      if (DATABASE_URL) await server.db.query(`drop schema if exists "${server.config.schema}" cascade`).catch(() => undefined);
      await server.close();
    }
  });
});
