import { describe, expect, it } from 'vitest';
import { backends } from '../support/databases.js';
import { auditWorld, brief } from '../support/audit-world.js';

describe.each(backends())('audit of a sound deployment ($name)', (backend) => {
  it('finds nothing, fully or incrementally, and examines only what changed the second time', async () => {
    const world = await auditWorld(backend);
    const full = await world.audit({ full: true });
    expect(brief(full)).toEqual([]);
    expect(full.clean).toBe(true);
    expect(full.checks.map((c) => c.name)).toEqual(['log', 'trail', 'processors', 'effects', 'outbox', 'charges', 'orders', 'accounts', 'inbox']);
    const again = await world.audit();
    expect(brief(again)).toEqual([]);
    expect(again.checks.find((c) => c.name === 'orders')).toMatchObject({ incremental: true, examined: 0 });
    expect(again.checks.find((c) => c.name === 'log')).toMatchObject({ incremental: true, examined: 0 });
  });
});
