import { createPrivateKey, createPublicKey, sign, verify, type KeyObject } from 'node:crypto';
import { ValidationError } from '../errors.js';

/**
 * A digest: the head of the trail at a moment, to keep where a database administrator cannot
 * reach it. Whoever holds one can later prove that nothing up to its block changed.
 */
export interface Digest {
  /** The format: rastro-digest/1. */
  format: 'rastro-digest/1';
  /** The schema the trail belongs to. */
  schema: string;
  /** The head block when the digest was taken, and its hash (hex). */
  block: number;
  hash: string;
  /** The last event it seals, in the log's global order. */
  lastTxOrder: number;
  lastPosition: number;
  sealedAt: string;
  takenAt: string;
  /** Ed25519 over {@link digestPayload}, when a key was configured. */
  signature?: { algorithm: 'Ed25519'; publicKey: string; value: string };
}

/** What a signature covers: every field but the signature, in a fixed order. */
export function digestPayload(digest: Omit<Digest, 'signature'>): Buffer {
  return Buffer.from([digest.format, digest.schema, digest.block, digest.hash, digest.lastTxOrder, digest.lastPosition, digest.sealedAt, digest.takenAt].join('\n'), 'utf8');
}

/** An Ed25519 private key from PEM (PKCS#8), as `RASTRO_DIGEST_KEY_FILE` holds it. */
export function digestKey(pem: string | Buffer): KeyObject {
  let key: KeyObject;
  try {
    key = createPrivateKey(pem);
  } catch {
    throw new ValidationError('RASTRO_DIGEST_KEY_FILE', 'is not a PEM private key');
  }
  if (key.asymmetricKeyType !== 'ed25519') throw new ValidationError('RASTRO_DIGEST_KEY_FILE', `must be an Ed25519 key, not ${key.asymmetricKeyType}`);
  return key;
}

/** The digest signed with `key`. */
export function signDigest(digest: Omit<Digest, 'signature'>, key: KeyObject): Digest {
  const publicKey = createPublicKey(key).export({ type: 'spki', format: 'pem' }).toString();
  return { ...digest, signature: { algorithm: 'Ed25519', publicKey, value: sign(null, digestPayload(digest), key).toString('base64') } };
}

/**
 * Whether the digest's signature is valid for `trusted` (a public key in PEM, or a key object):
 * a digest is only as good as the key the verifier trusts, never the one it carries.
 */
export function digestSignedBy(digest: Digest, trusted: string | KeyObject): boolean {
  if (!digest.signature || digest.signature.algorithm !== 'Ed25519') return false;
  const key = typeof trusted === 'string' ? createPublicKey(trusted) : trusted.type === 'private' ? createPublicKey(trusted) : trusted;
  const { signature, ...unsigned } = digest;
  try {
    return verify(null, digestPayload(unsigned), key, Buffer.from(signature.value, 'base64'));
  } catch {
    return false;
  }
}

const HEX64 = /^[0-9a-f]{64}$/;

/** Checks a digest read from a file; throws ValidationError naming what is wrong. */
export function parseDigest(value: unknown, source: string): Digest {
  const d = value as Partial<Digest> | null;
  if (typeof d !== 'object' || d === null || d.format !== 'rastro-digest/1') throw new ValidationError(source, 'is not a rastro digest (format rastro-digest/1)');
  if (!Number.isSafeInteger(d.block) || (d.block as number) < 1) throw new ValidationError(`${source}.block`, 'must be a block number');
  if (typeof d.hash !== 'string' || !HEX64.test(d.hash)) throw new ValidationError(`${source}.hash`, 'must be 64 hex digits');
  if (typeof d.schema !== 'string') throw new ValidationError(`${source}.schema`, 'must be the schema name');
  return d as Digest;
}
