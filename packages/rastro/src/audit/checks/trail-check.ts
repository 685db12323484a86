import { verifyTrail, type TrailCheckpoint } from '../../trail/verify.js';
import type { AuditCheck } from '../finding.js';

/**
 * The trail (docs/trail.md): every event's hash against its content and its predecessor's,
 * every stream's head, every block's Merkle root and chain; incrementally from where this
 * check's last audit stopped, and everything when the statistics count a delete or an update
 * of the trail's tables since. Digests are `rastro verify --digest`'s.
 */
export const trailCheck: AuditCheck = {
  name: 'trail',
  summary: "the hash chain: each event's hash, each stream's head, each sealed block",
  async run(ctx) {
    const since = ctx.scope.full ? undefined : (ctx.memory.checkpoint as TrailCheckpoint | undefined);
    const verification = await verifyTrail(ctx.store, { full: ctx.scope.full, since, onProgress: (n) => ctx.progress(n) });
    return { findings: verification.findings, examined: verification.examined, memory: { checkpoint: verification.checkpoint } };
  },
};
