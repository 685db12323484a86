import { ValidationError } from './errors.js';

const KEY = /^[\x21-\x7e]{1,255}$/;

/** Checks an `Idempotency-Key` (1 to 255 visible ASCII characters), for the HTTP keys and charges alike. */
export function validateIdempotencyKey(key: string): string {
  if (!KEY.test(key)) throw new ValidationError('Idempotency-Key', 'must be 1 to 255 visible ASCII characters');
  return key;
}
