import { RastroError } from 'rastro/internal/errors.js';

/** No run, effect, parked event or parked message with that id. */
export class OperationTargetNotFoundError extends RastroError {
  constructor(kind: string, id: string) {
    super('RASTRO_NOT_FOUND', `no ${kind} ${JSON.stringify(id)}`);
  }
}

/** The operation cannot be done in the current state: a run already exists or runs, no processors or publisher loaded. */
export class OperationConflictError extends RastroError {
  constructor(message: string) {
    super('RASTRO_CONFLICT', message);
  }
}
