import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { backends } from '../support/databases.js';
import { opsApp } from '../support/ops-fixture.js';

const [pglite] = backends();

describe('the OpenAPI document', () => {
  it.each([{ apiKey: 'secret-key' }, { apiKey: undefined }])('passes redocly lint with the recommended rules, no error or warning (api key: $apiKey)', async ({ apiKey }) => {
    const ops = await opsApp(pglite!, { apiKey });
    await ops.app.ready();
    const document = ops.app.swagger() as { paths: Record<string, Record<string, { operationId?: string; security?: unknown }>> };
    for (const [path, operations] of Object.entries(document.paths)) {
      for (const [method, operation] of Object.entries(operations)) expect(operation.operationId, `${method} ${path}`).toMatch(/^[a-z][A-Za-z0-9]+$/);
    }
    if (apiKey) expect(document.paths['/healthz']!.get!.security).toEqual([]);
    const file = join(mkdtempSync(join(tmpdir(), 'rastro-openapi-')), 'openapi.json');
    writeFileSync(file, JSON.stringify(document));
    const bin = join(import.meta.dirname, '..', '..', 'node_modules', '.bin', 'redocly');
    // The recommended rules, no telemetry or update check: nothing leaves the machine.
    const result = spawnSync(bin, ['lint', file, '--extends', 'recommended', '--format', 'json'], {
      encoding: 'utf8',
      env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', NO_COLOR: '1' },
      timeout: 60_000,
    });
    const report = JSON.parse(result.stdout.slice(result.stdout.indexOf('{'))) as { totals: { errors: number; warnings: number }; problems: { ruleId: string; message: string }[] };
    expect(report.problems.map((p) => `${p.ruleId}: ${p.message}`)).toEqual([]);
    expect(report.totals).toMatchObject({ errors: 0, warnings: 0 });
    expect(result.status).toBe(0);
  }, 90_000);
});
