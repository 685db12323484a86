import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto';
import type { Queryable } from '../db/database.js';
import { quoteSchema } from '../db/schema-name.js';
import { ConfigError, RastroError, ValidationError } from '../errors.js';

/**
 * Personal data that can be erased without touching an event (crypto-shredding). A field an
 * event type marks as personal is stored as an envelope, `rastro:pii:v1:<subject>:<sealed>`:
 * its JSON value sealed with AES-256-GCM under its data subject's key, bound to the subject and
 * the field's path. Each subject's key lives in `subject_keys`, wrapped by the master key.
 * Forgetting a subject deletes its key: every read then shows its fields as null, while the
 * events, their hashes and every proof of the trail (which cover the envelope) stay as they are.
 */

const PREFIX = 'rastro:pii:v1:';
const ALGORITHM = 'aes-256-gcm';

/** Which fields of an event type are personal, and which field names their data subject. */
export interface PersonalFields {
  /** The field holding the subject's id (a customer id): kept in clear, it finds the key. */
  subject: string;
  /** The fields to encrypt: names, or dot-separated paths (`address.street`). */
  fields: readonly string[];
}

/** The subject was forgotten: its personal data is not stored again under that id. */
export class SubjectForgottenError extends RastroError {
  readonly subject: string;

  constructor(subject: string) {
    super('RASTRO_SUBJECT_FORGOTTEN', `subject ${JSON.stringify(subject.slice(0, 200))} was forgotten: its personal data is not stored again under that id; give the person a new one`);
    this.subject = subject;
  }
}

const b64 = (bytes: Buffer) => bytes.toString('base64url');

function seal(key: Buffer, plaintext: Buffer, aad: string, iv: Buffer = randomBytes(12)): Buffer {
  const cipher = createCipheriv(ALGORITHM, key, iv);
  cipher.setAAD(Buffer.from(aad, 'utf8'));
  const body = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), body]);
}

function open(key: Buffer, sealed: Buffer, aad: string): Buffer {
  const decipher = createDecipheriv(ALGORITHM, key, sealed.subarray(0, 12));
  decipher.setAAD(Buffer.from(aad, 'utf8'));
  decipher.setAuthTag(sealed.subarray(12, 28));
  return Buffer.concat([decipher.update(sealed.subarray(28)), decipher.final()]);
}

/** The master key: 32 bytes, or their base64 or hex text (as `RASTRO_MASTER_KEY_FILE` holds them). */
export function masterKey(value: Buffer | string): Buffer {
  const text = Buffer.isBuffer(value) ? value.toString('utf8').trim() : value.trim();
  if (Buffer.isBuffer(value) && value.length === 32) return value;
  const key = /^[0-9a-f]{64}$/i.test(text) ? Buffer.from(text, 'hex') : Buffer.from(text, 'base64');
  if (key.length !== 32) throw new ConfigError('the master key must be 32 bytes (as raw bytes, 64 hex digits or base64)');
  return key;
}

/** Subjects' keys, loaded per read or append: a forgotten subject's key is gone from the next read on, in every process. */
export interface SubjectKeys {
  /** The keys of these subjects that exist (a forgotten subject has none). */
  load(subjects: Iterable<string>, target?: Queryable): Promise<Map<string, Buffer>>;
  /** The keys for new personal data of these subjects, made for those that have none; refuses a forgotten one. */
  forWriting(subjects: Iterable<string>, target?: Queryable): Promise<Map<string, Buffer>>;
  /** Deletes the subject's key and remembers it was forgotten, in `target` (a transaction). Resolves whether it had a key. */
  forget(subject: string, target: Queryable): Promise<boolean>;
}

export function subjectKeys(db: Queryable, schema: string, master: Buffer): SubjectKeys {
  const s = quoteSchema(schema);
  const unwrap = (subject: string, wrapped: Uint8Array) => open(master, Buffer.from(wrapped), `subject:${subject}`);
  async function load(subjects: Iterable<string>, target: Queryable = db): Promise<Map<string, Buffer>> {
    const wanted = [...new Set(subjects)];
    if (wanted.length === 0) return new Map();
    const { rows } = await target.query<{ subject: string; wrapped: Uint8Array }>(`select subject, wrapped from ${s}.subject_keys where subject = any($1::text[])`, [wanted]);
    return new Map(rows.map((row) => [row.subject, unwrap(row.subject, row.wrapped)]));
  }
  return {
    load,
    async forWriting(subjects, target = db) {
      const wanted = [...new Set(subjects)];
      if (wanted.length === 0) return new Map();
      const fresh = wanted.map(() => randomBytes(32));
      // One statement: keys made for subjects without one (a race keeps the first), and the forgotten among them.
      const { rows } = await target.query<{ forgotten: string[] }>(`with made as (
          insert into ${s}.subject_keys (subject, wrapped)
          select k.subject, k.wrapped from unnest($1::text[], $2::bytea[]) k(subject, wrapped)
          where not exists (select 1 from ${s}.forgotten_subjects f where f.subject = k.subject)
          on conflict (subject) do nothing)
        select coalesce(array_agg(subject), '{}') as forgotten from ${s}.forgotten_subjects where subject = any($1::text[])`,
        [wanted, wanted.map((subject, i) => seal(master, fresh[i]!, `subject:${subject}`))]);
      const [forgotten] = rows[0]!.forgotten;
      if (forgotten !== undefined) throw new SubjectForgottenError(forgotten);
      return load(wanted, target);
    },
    async forget(subject, target) {
      const { rowCount } = await target.query(`delete from ${s}.subject_keys where subject = $1`, [subject]);
      await target.query(`insert into ${s}.forgotten_subjects (subject) values ($1) on conflict (subject) do nothing`, [subject]);
      return rowCount > 0;
    },
  };
}

function pathOf(path: string): string[] {
  return path.split('.');
}

function getAt(data: Record<string, unknown>, path: string[]): unknown {
  let value: unknown = data;
  for (const key of path) value = typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[key] : undefined;
  return value;
}

/** A copy of `data` with the value at `path` replaced (objects on the way copied, never the caller's). */
function setAt(data: Record<string, unknown>, path: string[], value: unknown): Record<string, unknown> {
  const [head, ...rest] = path;
  const copy = { ...data };
  copy[head!] = rest.length === 0 ? value : setAt((data[head!] ?? {}) as Record<string, unknown>, rest, value);
  return copy;
}

/** The subject an event's data names, checked: a personal event needs one. */
export function subjectOf(data: Record<string, unknown>, personal: PersonalFields, at: string): string {
  const subject = getAt(data, pathOf(personal.subject));
  if (typeof subject !== 'string' || subject.length === 0 || subject.length > 200) {
    throw new ValidationError(`${at}.${personal.subject}`, 'must be the data subject\'s id, a string of 1 to 200 characters: the event has personal fields');
  }
  return subject;
}

/**
 * The data of event `eventId` with its personal fields sealed under the subject's key. The nonce
 * of each field is derived from the key, the event id and the field, so a retry of the same event
 * seals to the same bytes and is recognized as the same event; an event id is never appended with
 * other content (the store refuses it before storing), so no nonce seals two values.
 */
export function encryptPersonal(data: Record<string, unknown>, personal: PersonalFields, subject: string, key: Buffer, eventId: string): Record<string, unknown> {
  let sealed = data;
  for (const field of personal.fields) {
    const path = pathOf(field);
    const value = getAt(data, path);
    if (value === undefined) continue;
    const aad = `${subject}\u0000${field}`;
    const iv = createHmac('sha256', key).update(`${eventId.toLowerCase()}\u0000${field}`).digest().subarray(0, 12);
    const envelope = `${PREFIX}${b64(Buffer.from(subject, 'utf8'))}:${b64(seal(key, Buffer.from(JSON.stringify(value), 'utf8'), aad, iv))}`;
    sealed = setAt(sealed, path, envelope);
  }
  return sealed;
}

/** Every subject whose envelope `value` holds, to any depth. */
export function envelopeSubjects(value: unknown, found: Set<string> = new Set()): Set<string> {
  if (typeof value === 'string') {
    if (value.startsWith(PREFIX)) found.add(Buffer.from(value.slice(PREFIX.length, value.indexOf(':', PREFIX.length)), 'base64url').toString('utf8'));
  } else if (Array.isArray(value)) {
    for (const item of value) envelopeSubjects(item, found);
  } else if (typeof value === 'object' && value !== null) {
    for (const item of Object.values(value)) envelopeSubjects(item, found);
  }
  return found;
}

/**
 * The data with each envelope opened with its subject's key, or null where the key is gone (the
 * subject was forgotten). `path` is the field's own, which the envelope is bound to.
 */
export function decryptPersonal(value: unknown, keys: ReadonlyMap<string, Buffer>, path = ''): unknown {
  if (typeof value === 'string') {
    if (!value.startsWith(PREFIX)) return value;
    const split = value.indexOf(':', PREFIX.length);
    const subject = Buffer.from(value.slice(PREFIX.length, split), 'base64url').toString('utf8');
    const key = keys.get(subject);
    if (!key) return null;
    return JSON.parse(open(key, Buffer.from(value.slice(split + 1), 'base64url'), `${subject}\u0000${path}`).toString('utf8')) as unknown;
  }
  if (Array.isArray(value)) return value.map((item) => decryptPersonal(item, keys, path));
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([name, item]) => [name, decryptPersonal(item, keys, path === '' ? name : `${path}.${name}`)]));
  }
  return value;
}
