import { createHash, randomUUID } from 'node:crypto';
import type { Database, Queryable } from 'rastro/internal/db/database.js';
import { quoteSchema } from 'rastro/internal/db/schema-name.js';
import { isDatabaseUnavailable, isUniqueViolation } from 'rastro/internal/db/database-error.js';
import type { AlsoStatement } from 'rastro/internal/store/append-new.js';
import { IdempotencyKeyInFlightError } from 'rastro/internal/errors.js';

/** A stored first response. */
export interface StoredResponse {
  status: number;
  body: unknown;
}

export type Claim =
  | { kind: 'claimed'; owner: string }
  | { kind: 'replay'; response: StoredResponse }
  | { kind: 'in-flight' }
  | { kind: 'reused' };

/** What a key holds for a request: nothing, the first response, another request's, or one still in flight. */
export type KeyLookup =
  | { kind: 'free' }
  | { kind: 'reclaimable' }
  | Exclude<Claim, { kind: 'claimed' }>;

export interface IdempotencyKeyOptions {
  schema: string;
  /** How long a key is remembered. @defaultValue 24 h */
  ttlMs?: number;
  /** An in-flight key older than this belongs to a request whose process died; a retry may take it over. @defaultValue 60 s */
  leaseMs?: number;
}

function sql(s: string) {
  return {
    // Claims a new key, an expired one, or one abandoned in flight by a dead process.
    claim: `insert into ${s}.idempotency_keys (key, request_hash, owner, state, expires_at)
      values ($1, $2, $3, 'in_flight', now() + $4 * interval '1 millisecond')
      on conflict (key) do update
        set request_hash = excluded.request_hash, owner = excluded.owner, state = 'in_flight',
            response_status = null, response_body = null, locked_at = now(), created_at = now(), expires_at = excluded.expires_at
        where idempotency_keys.expires_at < now()
           or (idempotency_keys.state = 'in_flight' and idempotency_keys.request_hash = excluded.request_hash
               and idempotency_keys.locked_at < now() - $5 * interval '1 millisecond')
      returning owner`,
    existing: `select request_hash, state, response_status, response_body from ${s}.idempotency_keys where key = $1`,
    complete: `update ${s}.idempotency_keys set state = 'done', response_status = $3, response_body = $4
      where key = $1 and owner = $2 and state = 'in_flight'`,
    release: `delete from ${s}.idempotency_keys where key = $1 and owner = $2 and state = 'in_flight'`,
    /**
     * A finished request's key and response, as `also` of an append (see `appendNew`): written
     * in the statement that appends the request's events, only when they are appended. Taken
     * keys fail it with a unique violation, which undoes the append.
     */
    recordWith: `insert into ${s}.idempotency_keys (key, request_hash, owner, state, response_status, response_body, expires_at)
      select $11, $12, $13, 'done', $14, $15, now() + $16 * interval '1 millisecond' from stream`,
    /** A finished request's key and response, alone: a final error. No row when the key is taken. */
    recordFinal: `insert into ${s}.idempotency_keys (key, request_hash, owner, state, response_status, response_body, expires_at)
      values ($1, $2, $3, 'done', $4, $5, now() + $6 * interval '1 millisecond')
      on conflict (key) do nothing
      returning owner`,
    /** Deletes a key a new request may take: expired, or abandoned in flight by a dead process with the same request. */
    reclaim: `delete from ${s}.idempotency_keys
      where key = $1 and (expires_at < now() or (state = 'in_flight' and request_hash = $2 and locked_at < now() - $3 * interval '1 millisecond'))`,
    existingState: `select request_hash, state, response_status, response_body, expires_at < now() as expired,
        locked_at < now() - $2 * interval '1 millisecond' as abandoned
      from ${s}.idempotency_keys where key = $1`,
    cleanup: `delete from ${s}.idempotency_keys where key in (
      select key from ${s}.idempotency_keys where expires_at < now() limit 1000)`,
  } as const;
}

export { validateIdempotencyKey } from 'rastro/internal/idempotency-key.js';

/** Whether an append with {@link IdempotencyKeys.recordWith} failed because its key was taken. */
export function isKeyTaken(err: unknown): boolean {
  return isUniqueViolation(err, 'idempotency_keys_pkey');
}

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** What makes two requests "the same" for a key: method, path and the body's JSON value. */
export function requestFingerprint(method: string, path: string, body: unknown): string {
  return createHash('sha256').update(`${method} ${path}\n${canonicalJson(body)}`).digest('hex');
}

/**
 * Stripe-style idempotency keys. A request claims its key (committed at once, so a concurrent
 * duplicate sees it in flight), does its work in a transaction, and stores its response in that
 * same transaction: either the events and the response commit together, or neither does.
 */
export function createIdempotencyKeys(db: Database, options: IdempotencyKeyOptions) {
  const statements = sql(quoteSchema(options.schema));
  const ttlMs = options.ttlMs ?? 24 * 60 * 60 * 1000;
  const leaseMs = options.leaseMs ?? 60_000;

  /**
   * Deletes an in-flight claim; while the database cannot be reached, tries again in the
   * background (for up to the lease), so a retry after a short outage finds the key free instead
   * of in flight until the lease runs out.
   */
  async function release(key: string, owner: string): Promise<void> {
    const started = Date.now();
    const attempt = async (): Promise<void> => {
      await db.query(statements.release, [key, owner]);
    };
    try {
      await attempt();
    } catch (err) {
      if (!isDatabaseUnavailable(err)) throw err;
      let wait = 250;
      const retry = () => {
        if (Date.now() - started + wait > leaseMs) return;
        setTimeout(() => {
          attempt().catch((again: unknown) => {
            if (!isDatabaseUnavailable(again)) return;
            wait = Math.min(wait * 2, 5000);
            retry();
          });
        }, wait).unref();
      };
      retry();
      throw err;
    }
  }

  async function claim(key: string, fingerprint: string): Promise<Claim> {
    const owner = randomUUID();
    const claimed = await db.query<{ owner: string }>(statements.claim, [key, fingerprint, owner, ttlMs, leaseMs]).catch(async (err: unknown) => {
      // The claim may have committed with its answer lost on the way: free it, it is this request's.
      if (isDatabaseUnavailable(err)) await release(key, owner).catch(() => undefined);
      throw err;
    });
    if (claimed.rowCount === 1) return { kind: 'claimed', owner };
    const { rows } = await db.query<{ request_hash: string; state: string; response_status: number; response_body: unknown }>(statements.existing, [key]);
    const row = rows[0];
    if (!row) return claim(key, fingerprint); // expired and cleaned up in between
    if (row.request_hash !== fingerprint) return { kind: 'reused' };
    if (row.state !== 'done') return { kind: 'in-flight' };
    return { kind: 'replay', response: { status: row.response_status, body: row.response_body } };
  }

  /** Stores the response; must run in the transaction that did the request's work. */
  async function complete(target: Queryable, key: string, owner: string, response: StoredResponse): Promise<void> {
    const { rowCount } = await target.query(statements.complete, [key, owner, response.status, JSON.stringify(response.body)]);
    // Another request took the key over (this one outlived its lease): roll this one back.
    if (rowCount !== 1) throw new IdempotencyKeyInFlightError();
  }

  /**
   * The statement that records a finished request's response with its key, as `also` of the
   * append that does the request's work (one statement, one commit). When the key is taken
   * (a retry, a concurrent request with the same key) it fails with a unique violation that undoes
   * the append: see {@link isKeyTaken}, then {@link lookup}.
   */
  function recordWith(key: string, fingerprint: string, response: StoredResponse): AlsoStatement {
    return { text: statements.recordWith, values: [key, fingerprint, randomUUID(), response.status, JSON.stringify(response.body), ttlMs] };
  }

  /** Records a final response with its key, alone; false when the key is taken. */
  async function recordFinal(key: string, fingerprint: string, response: StoredResponse): Promise<boolean> {
    const { rowCount } = await db.query(statements.recordFinal, [key, fingerprint, randomUUID(), response.status, JSON.stringify(response.body), ttlMs]);
    return rowCount === 1;
  }

  /** What the key holds for a request with this fingerprint. */
  async function lookup(key: string, fingerprint: string): Promise<KeyLookup> {
    const { rows } = await db.query<{ request_hash: string; state: string; response_status: number; response_body: unknown; expired: boolean; abandoned: boolean }>(
      statements.existingState,
      [key, leaseMs],
    );
    const row = rows[0];
    if (!row) return { kind: 'free' };
    if (row.expired || (row.state === 'in_flight' && row.abandoned && row.request_hash === fingerprint)) return { kind: 'reclaimable' };
    if (row.request_hash !== fingerprint) return { kind: 'reused' };
    if (row.state !== 'done') return { kind: 'in-flight' };
    return { kind: 'replay', response: { status: row.response_status, body: row.response_body } };
  }

  /** Deletes the key when it is expired, or abandoned in flight by a dead process with the same request; true when it did. */
  async function reclaim(key: string, fingerprint: string): Promise<boolean> {
    return (await db.query(statements.reclaim, [key, fingerprint, leaseMs])).rowCount === 1;
  }

  /** Deletes expired keys; returns how many. */
  async function cleanup(): Promise<number> {
    let total = 0;
    for (;;) {
      const { rowCount } = await db.query(statements.cleanup);
      total += rowCount;
      if (rowCount < 1000) return total;
    }
  }

  return { claim, complete, release, recordWith, recordFinal, lookup, reclaim, cleanup };
}

export type IdempotencyKeys = ReturnType<typeof createIdempotencyKeys>;
