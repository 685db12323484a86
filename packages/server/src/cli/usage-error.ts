/** Misuse of the command line (an unknown command or option, a bad option value): exit code 2. */
export class UsageError extends Error {
  /** The command's usage, printed after the message when given. */
  readonly usage: string | undefined;

  constructor(message: string, usage?: string) {
    super(message);
    this.name = 'UsageError';
    this.usage = usage;
  }
}
