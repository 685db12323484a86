import type { KeyObject } from 'node:crypto';
import type { PublishedDigest } from '../../trail/publish-digest.js';
import { verifyTrail, type TrailCheckpoint } from '../../trail/verify.js';
import type { AuditCheck, Finding } from '../finding.js';

export interface TrailCheckOptions {
  /** The digests published outside the database (RASTRO_DIGEST_PUBLISH): each must still be part of the chain. */
  digests?: () => Promise<PublishedDigest[]>;
  /** The key the digests must be signed with; without one, signatures are not checked. */
  publicKey?: KeyObject | string;
}

/**
 * The trail (docs/trail.md): every event's hash against its content and its predecessor's,
 * every stream's head, every block's Merkle root and chain; incrementally from where this
 * check's last audit stopped, and everything when the statistics count a delete or an update
 * of the trail's tables since. Then the newest published digests, when the deployment publishes
 * them to a folder: after a failover that lost the last commits, these name the blocks lost.
 */
export function trailCheck(options: TrailCheckOptions = {}): AuditCheck {
  return {
    name: 'trail',
    summary: "the hash chain: each event's hash, each stream's head, each sealed block, the published digests",
    async run(ctx) {
      const since = ctx.scope.full ? undefined : (ctx.memory.checkpoint as TrailCheckpoint | undefined);
      const published = (await options.digests?.()) ?? [];
      const unreadable: Finding[] = published.flatMap((p) => 'problem' in p
        ? [{ check: 'trail', kind: 'digest-unreadable', subject: { type: 'digest' as const, id: p.source }, detail: `the published digest ${p.problem}`, action: 'find who wrote it: only serve writes the digest folder; keep it where a database administrator cannot write' }]
        : []);
      const digests = published.flatMap((p) => ('digest' in p ? [p] : []));
      const verification = await verifyTrail(ctx.store, { full: ctx.scope.full, since, digests, publicKey: options.publicKey, onProgress: (n) => ctx.progress(n) });
      return { findings: [...verification.findings, ...unreadable], examined: verification.examined + published.length, memory: { checkpoint: verification.checkpoint } };
    },
  };
}
