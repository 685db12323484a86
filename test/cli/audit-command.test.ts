import { describe, expect, it } from 'vitest';
import { postgresBackend } from '../support/databases.js';
import { auditWorld } from '../support/audit-world.js';
import { runRastro } from '../support/cli.js';

const backend = postgresBackend();

describe('rastro audit', () => {
  it('exits 2 naming an unknown check, and for --full with --since', async () => {
    const unknown = await runRastro(['audit', '--check', 'log,ledger'], { RASTRO_DATA_DIR: 'memory://' });
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('"ledger" is not a check; choose from log, trail, processors');
    const both = await runRastro(['audit', '--full', '--since', '2026-01-01T00:00:00Z'], { RASTRO_DATA_DIR: 'memory://' });
    expect(both.code).toBe(2);
    const date = await runRastro(['audit', '--since', 'yesterday'], { RASTRO_DATA_DIR: 'memory://' });
    expect(date.code).toBe(2);
    expect(date.stderr).toContain('--since: is not a date');
  });

  it.skipIf(!backend)('exits 0 on a sound deployment and 1 with the table of findings after damage', async () => {
    const world = await auditWorld(backend!);
    const env = { DATABASE_URL: process.env.DATABASE_URL, RASTRO_SCHEMA: world.schema, RASTRO_CHARGE_DEADLINE_SECONDS: '60' };
    const clean = await runRastro(['audit', '--full'], env);
    expect(clean.stderr).toBe(clean.code === 0 ? clean.stderr : '');
    expect(clean.code).toBe(0);
    expect(clean.stdout).toContain('clean: nothing lost, doubled or left behind');
    await world.sql(`update {s}.snapshots set state = jsonb_set(state, '{balance}', '1') where stream_id = $1`, [`account-${world.ids.account}`]);
    const found = await runRastro(['audit'], env);
    expect(found.code).toBe(1);
    expect(found.stdout).toMatch(/accounts\s+snapshot-differs\s+account /);
    expect(found.stderr).toContain('[RASTRO_AUDIT_FINDINGS]');
    const json = await runRastro(['audit', '--json', '--check', 'accounts'], env);
    expect(json.code).toBe(1);
    const report = JSON.parse(json.stdout) as { clean: boolean; findings: { kind: string; subject: { id: string } }[]; checks: { name: string; incremental: boolean }[] };
    expect(report.clean).toBe(false);
    expect(report.findings).toEqual([expect.objectContaining({ kind: 'snapshot-differs', subject: { type: 'account', id: world.ids.account } })]);
    expect(report.checks).toEqual([expect.objectContaining({ name: 'accounts', incremental: true })]);
  });

  it.skipIf(!backend)('prints every finding of a long JSON report before it exits 1, into a pipe', async () => {
    const world = await auditWorld(backend!);
    const env = { DATABASE_URL: process.env.DATABASE_URL, RASTRO_SCHEMA: world.schema };
    await world.store.append('bulk-1', Array.from({ length: 400 }, (_, n) => ({ type: 'bulk.added', data: { n } })));
    // 400 events edited behind the triggers: 400 findings, far more than a pipe holds at once.
    await world.sql(`alter table {s}.events disable trigger user;
      update {s}.events set data = jsonb_set(data, '{n}', '-1') where stream_id = 'bulk-1';
      alter table {s}.events enable always trigger events_immutable_rows;
      alter table {s}.events enable always trigger events_immutable_truncate`);
    const json = await runRastro(['audit', '--json', '--full', '--check', 'trail'], env);
    expect(json.code).toBe(1);
    expect(json.stdout.length).toBeGreaterThan(65_536);
    const report = JSON.parse(json.stdout) as { findings: { kind: string }[] };
    expect(report.findings.filter((f) => f.kind === 'event-altered')).toHaveLength(400);
  });
});
