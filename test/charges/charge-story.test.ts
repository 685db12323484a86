import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runChargeStory } from '../../packages/server/src/demo/charge-story.js';

describe('the charge story (seed 002), as `rastro demo charges` tells it', () => {
  it('a capture whose process was killed is found by reconciliation; an unknown one ends in review', async () => {
    const lines: string[] = [];
    const report = await runChargeStory({ dataDir: await mkdtemp(join(tmpdir(), 'rastro-charges-')), log: (line) => lines.push(line) });
    // The retry found the PENDING charge: 202, no blind second capture.
    expect(report.retryStatus).toBe(202);
    expect(report.killed.status).toBe('PENDING');
    expect(report.captureRequests).toBe(1);
    // Reconciliation found the capture the dead process never recorded.
    expect(report.reconciled).toMatchObject({ status: 'CAPTURED', idempotencyKey: report.killed.idempotencyKey });
    expect(report.reconciled.captureId).toMatch(/^cap_/);
    // The acquirer could not say: asked more than once, then review, never FAILED or CAPTURED.
    expect(report.unknown.status).toBe('NEEDS_REVIEW');
    expect(report.unknownLookups).toBeGreaterThanOrEqual(2);
    expect(report.messages.map((m) => m.type)).toEqual(['ChargeStarted', 'ChargeCaptured', 'ChargeStarted', 'ChargeNeedsReview']);
    expect(report.pendingInOutbox).toBe(0);
    expect(lines.some((line) => line.includes('SIGKILL'))).toBe(true);
  }, 90_000);
});
