/**
 * A wait that a notification or a stop cuts short: what every tailing loop sleeps on between
 * reads. A notification that arrives while the loop is reading is kept, so the next wait returns
 * at once instead of missing it. A backoff after a failure is cut short only by a stop: new work
 * arriving is no reason to try a broker or database that just failed again sooner.
 */
export class WakeUp {
  private notified = false;
  private stopped = false;
  private wake: (() => void) | undefined;
  private waitingOut = false;

  /** A notification arrived: the current or next wait ends now, unless it is a backoff. */
  readonly signal = (): void => {
    this.notified = true;
    if (!this.waitingOut) this.wake?.();
  };

  /** Forgets notifications seen so far; call before reading. */
  reset(): void {
    this.notified = false;
  }

  /** Ends the current wait and every later one. */
  stop(): void {
    this.stopped = true;
    this.wake?.();
  }

  get isStopped(): boolean {
    return this.stopped;
  }

  /** Waits `ms`, or less when notified (`backoff: true`: only a stop ends it early). */
  sleep(ms: number, { backoff = false } = {}): Promise<void> {
    return new Promise<void>((resolve) => {
      if (this.stopped || (this.notified && !backoff)) return resolve();
      this.waitingOut = backoff;
      const finish = () => {
        clearTimeout(timer);
        this.wake = undefined;
        this.waitingOut = false;
        resolve();
      };
      const timer = setTimeout(finish, ms);
      this.wake = finish;
    });
  }
}
