import { DatabaseError, RastroError } from '../errors.js';

interface DriverError {
  message?: unknown;
  code?: unknown;
  constraint?: unknown;
}

/**
 * Turns a driver error into a {@link DatabaseError} that keeps the SQLSTATE and constraint but
 * drops what may hold data: the statement, bound values and the server's DETAIL line.
 */
export function toDatabaseError(err: unknown): Error {
  if (err instanceof RastroError) return err;
  const driver = (typeof err === 'object' && err !== null ? err : {}) as DriverError;
  const sqlState = typeof driver.code === 'string' ? driver.code : undefined;
  const constraint = typeof driver.constraint === 'string' ? driver.constraint : undefined;
  const message = typeof driver.message === 'string' ? driver.message : 'database error';
  return new DatabaseError(message, sqlState, constraint);
}

export function isUniqueViolation(err: unknown, constraint?: string): boolean {
  return err instanceof DatabaseError && err.sqlState === '23505' && (constraint === undefined || err.constraint === constraint);
}
