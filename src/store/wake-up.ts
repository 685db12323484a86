/**
 * A wait that a notification or a stop cuts short: what every tailing loop sleeps on between
 * reads. A notification that arrives while the loop is reading is kept, so the next wait returns
 * at once instead of missing it.
 */
export class WakeUp {
  private notified = false;
  private stopped = false;
  private wake: (() => void) | undefined;

  /** A notification arrived: the current or next wait ends now. */
  readonly signal = (): void => {
    this.notified = true;
    this.wake?.();
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

  sleep(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      if (this.notified || this.stopped) return resolve();
      const finish = () => {
        clearTimeout(timer);
        this.wake = undefined;
        resolve();
      };
      const timer = setTimeout(finish, ms);
      this.wake = finish;
    });
  }
}
