/** Misuse of the command line (an unknown command or option, a bad option value): exit code 2. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}
