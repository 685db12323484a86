import { runAudit, type AuditOptions, type AuditReport } from 'rastro/internal/audit/run-audit.js';
import type { EventStore } from 'rastro/internal/store/event-store.js';
import { WakeUp } from 'rastro/internal/store/wake-up.js';

export interface AuditScheduleOptions {
  /** Seconds between audits. */
  intervalSeconds: number;
  settings: AuditOptions;
  onAudit?: (report: AuditReport) => void;
  onError?: (err: unknown) => void;
}

/**
 * serve's audit: an incremental audit every `intervalSeconds` (the first one at once), one at a
 * time; a failed one is reported and tried again at the next interval. Returns what stops it.
 */
export function startAuditSchedule(store: EventStore, options: AuditScheduleOptions): () => Promise<void> {
  const wake = new WakeUp();
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      try {
        options.onAudit?.(await runAudit(store, options.settings));
      } catch (err) {
        if (!stopped) options.onError?.(err);
      }
      await wake.sleep(options.intervalSeconds * 1000);
    }
  })();
  return async () => {
    stopped = true;
    wake.stop();
    await loop;
  };
}
