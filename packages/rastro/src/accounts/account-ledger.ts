import { randomUUID } from 'node:crypto';
import type { Queryable, Transaction } from '../db/database.js';
import { AccountNotFoundError, ConcurrencyError, InsufficientFundsError, PreconditionFailedError, ValidationError } from '../errors.js';
import type { RecordedEvent } from '../store/event.js';
import type { AlsoStatement } from '../store/append-new.js';
import type { EventStore } from '../store/event-store.js';
import { unstorableReason } from '../store/storable-text.js';
import {
  ACCOUNT_DEPOSITED,
  ACCOUNT_OPENED,
  ACCOUNT_STREAM_PREFIX,
  ACCOUNT_WITHDRAWN,
  accountStreamId,
  foldAccount,
  MAX_AMOUNT,
  MAX_OWNER_LENGTH,
  type Account,
  type AccountState,
} from './account.js';
import { AccountCache } from './account-cache.js';

export interface AccountLedgerOptions {
  /** Write a snapshot every this many events; 0 turns snapshots off. @defaultValue 100 */
  snapshotEvery?: number;
  /** Attempts for a write that loses the race for the account's version. @defaultValue 20 */
  maxAttempts?: number;
  /**
   * Accounts whose state this process remembers between requests (see {@link AccountCache}); 0
   * turns the cache off, and every request then reads the account from its latest snapshot.
   * @defaultValue 10000
   */
  cacheSize?: number;
}

/** A deposit or withdrawal as the API shows it. */
export interface Movement {
  id: string;
  type: string;
  amount: number;
  version: number;
  occurredAt: string;
}

export interface WriteOptions {
  /** Fail with PreconditionFailedError unless the account is at this version. */
  ifVersion?: number;
  /** Write in the caller's transaction; with rastro's own (`db.transaction`), the account is remembered once it commits. */
  tx?: Queryable | Transaction;
  /**
   * A row of the caller's written in the same statement as the move's event, given the movement
   * it records (an idempotency key's stored response): both are written, or neither. Not with `tx`.
   */
  also?: (movement: Movement) => AlsoStatement;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export function validateAmount(amount: unknown): number {
  if (typeof amount !== 'number' || !Number.isInteger(amount) || amount < 1 || amount > MAX_AMOUNT) {
    throw new ValidationError('amount', `must be an integer from 1 to ${MAX_AMOUNT}`);
  }
  return amount;
}

export function validateOwner(owner: unknown): string {
  if (typeof owner !== 'string' || owner.trim().length === 0 || owner.length > MAX_OWNER_LENGTH) {
    throw new ValidationError('owner', `must be a non-empty string of at most ${MAX_OWNER_LENGTH} characters`);
  }
  const unstorable = unstorableReason(owner);
  if (unstorable) throw new ValidationError('owner', unstorable);
  return owner;
}

export function toMovement(event: RecordedEvent): Movement {
  return {
    id: event.id,
    type: event.type,
    amount: event.data.amount as number,
    version: event.streamVersion,
    occurredAt: event.occurredAt.toISOString(),
  };
}

const jitter = (attempt: number) => new Promise((resolve) => setTimeout(resolve, Math.random() * Math.min(2 ** attempt, 50)));

/**
 * Accounts whose balance is replayed from their events (from the latest snapshot on). Writes
 * use the stream's expected version, so two withdrawals can never both spend the same money.
 *
 * @example
 * ```ts
 * const ledger = createAccountLedger(store)
 * const account = await ledger.open('Ana')
 * await ledger.deposit(account.id, 1_000)
 * await ledger.withdraw(account.id, 300) // balance 700
 * ```
 */
export function createAccountLedger(store: EventStore<any>, options: AccountLedgerOptions = {}) {
  const snapshotEvery = options.snapshotEvery ?? 100;
  const maxAttempts = options.maxAttempts ?? 20;
  const cache = new AccountCache(options.cacheSize ?? 10_000);

  /** The account from its latest snapshot and the events after it, and the stream's head there. */
  async function readAccount(accountId: string, tx: Queryable | undefined): Promise<{ account: Account; head: string | null }> {
    const { snapshot, events, head } = await store.readStreamTail<AccountState>(accountStreamId(accountId), { tx });
    const account = foldAccount(accountId, snapshot, events);
    if (!account) throw new AccountNotFoundError(accountId);
    return { account, head };
  }

  /**
   * The account as it stands (as `tx` sees it, inside one), with the stream's head there: a
   * remembered account brought up to date with what was appended since (from a newer snapshot,
   * if one was taken meanwhile), or read from its snapshot. A remembered account whose version
   * holds another event than the one it was folded from (the stream was written again after a
   * failover lost its tail) is dropped and read afresh. Outside a transaction, what it read is
   * committed, and is remembered.
   */
  async function current(accountId: string, tx: Queryable | undefined): Promise<{ account: Account; head: string | null }> {
    const cached = cache.get(accountId);
    if (cached) {
      const { id, version, ...state } = cached.account;
      const since = await store.readStreamTail<AccountState>(accountStreamId(accountId), { tx, afterVersion: version });
      if (since.snapshot || since.base === cached.head) {
        if (!since.snapshot && since.events.length === 0) {
          // Nothing appended since this process last wrote: no other writer is about.
          if (!tx) cache.remember(cached.account, cached.head, false);
          return { account: cached.account, head: cached.head };
        }
        const account = foldAccount(id, since.snapshot ?? { version, state }, since.events)!;
        if (!tx) cache.remember(account, since.head);
        return { account, head: since.head };
      }
      cache.forget(accountId);
    }
    const read = await readAccount(accountId, tx);
    if (!tx) cache.remember(read.account, read.head);
    return read;
  }

  async function get(accountId: string, { tx }: { tx?: Queryable } = {}): Promise<Account> {
    if (!UUID.test(accountId)) throw new AccountNotFoundError(accountId);
    return (await current(accountId, tx)).account;
  }

  async function open(owner: string, { tx }: { tx?: Queryable } = {}): Promise<Account> {
    validateOwner(owner);
    const id = randomUUID();
    const occurredAt = new Date();
    await store.append(accountStreamId(id), [{ type: ACCOUNT_OPENED, data: { owner }, occurredAt }], { expectedVersion: 'no-stream', tx });
    // Its head is read with the account's first use: an append that is not new-only returns none.
    return { id, version: 1, owner, createdAt: occurredAt.toISOString(), balance: 0 };
  }

  async function snapshotIfDue(account: Account, tx?: Queryable): Promise<void> {
    if (snapshotEvery > 0 && account.version % snapshotEvery === 0) {
      const { id, version, ...state } = account;
      await store.saveSnapshot(accountStreamId(id), { version, state }, { tx });
    }
  }

  /** Why `account` refuses the move, or undefined. */
  function refusal(account: Account, type: string, amount: number, ifVersion: number | undefined): Error | undefined {
    if (ifVersion !== undefined && account.version !== ifVersion) return new PreconditionFailedError(`W/"${ifVersion}"`, account.version);
    const balance = account.balance + (type === ACCOUNT_WITHDRAWN ? -amount : amount);
    if (balance < 0) return new InsufficientFundsError(account.balance, amount);
    if (!Number.isSafeInteger(balance)) return new ValidationError('amount', 'would take the balance past the largest safe integer');
    return undefined;
  }

  /**
   * Appends the move at the version the account was read at, so the store refuses it when
   * another write came first. The account remembered by this process is taken as read: the
   * append proves it current, and a refusal is only ever decided on the account read afresh.
   */
  async function move(accountId: string, type: string, amount: number, { ifVersion, tx, also }: WriteOptions): Promise<Movement> {
    validateAmount(amount);
    if (also !== undefined && (typeof also !== 'function' || tx !== undefined)) throw new ValidationError('also', 'must be a function returning a statement, without tx');
    if (!UUID.test(accountId)) throw new AccountNotFoundError(accountId);
    for (let attempt = 1; ; attempt++) {
      const cached = attempt === 1 ? cache.get(accountId) : undefined;
      const guess = cached && !cached.contended ? cached : undefined;
      let read = guess ?? (await current(accountId, tx));
      let refused = refusal(read.account, type, amount, ifVersion);
      if (refused && guess) {
        read = await current(accountId, tx);
        refused = refusal(read.account, type, amount, ifVersion);
      }
      if (refused) throw refused;
      const { account } = read;
      const event = { id: randomUUID(), type, data: { amount }, occurredAt: new Date() };
      const movement = { id: event.id, type, amount, version: account.version + 1, occurredAt: event.occurredAt.toISOString() };
      let head: string | null = null;
      try {
        // The event is new (its id made here): outside a transaction, one statement, with `also`
        // in it, at the version and head the account was folded at.
        if (tx) await store.append(accountStreamId(accountId), [event], { expectedVersion: account.version, tx });
        else head = (await store.appendNew(accountStreamId(accountId), [event], { version: account.version, head: read.head }, also?.(movement))).head;
      } catch (err) {
        if (!(err instanceof ConcurrencyError)) throw err;
        cache.markContended(accountId);
        if (ifVersion !== undefined) throw new PreconditionFailedError(`W/"${ifVersion}"`, err.actual);
        if (attempt >= maxAttempts) throw err;
        // A remembered account that was behind is no race lost: read it afresh at once.
        if (read !== guess) await jitter(attempt);
        continue;
      }
      const after = { ...account, balance: account.balance + (type === ACCOUNT_WITHDRAWN ? -amount : amount), version: movement.version };
      await snapshotIfDue(after, tx);
      // Written in a caller's transaction, the account is read afresh next time: that append
      // returns no head, and the transaction may yet roll back.
      if (tx) cache.forget(accountId);
      else cache.remember(after, head);
      return movement;
    }
  }

  async function events(accountId: string, { after = 0, limit = 100 }: { after?: number; limit?: number } = {}): Promise<RecordedEvent[]> {
    await get(accountId);
    return store.readStream(accountStreamId(accountId), { fromVersion: after + 1, toVersion: after + limit });
  }

  /** Drops every account snapshot and writes one per account from its full history; `onProgress` after each batch of accounts. */
  async function rebuildSnapshots(options: { onProgress?: (progress: { accounts: number; written: number }) => void } = {}): Promise<{ dropped: number; written: number }> {
    cache.clear();
    const dropped = await store.dropSnapshots(ACCOUNT_STREAM_PREFIX);
    let written = 0;
    let accounts = 0;
    let afterStreamId = '';
    for (;;) {
      const streams = await store.listStreams(ACCOUNT_STREAM_PREFIX, { afterStreamId, limit: 500 });
      if (streams.length === 0) break;
      for (const { streamId } of streams) {
        const accountId = streamId.slice(ACCOUNT_STREAM_PREFIX.length);
        const account = foldAccount(accountId, null, await store.readStream(streamId));
        if (!account || snapshotEvery === 0 || account.version < snapshotEvery) continue;
        const { id, version, ...state } = account;
        await store.saveSnapshot(streamId, { version, state });
        written++;
      }
      afterStreamId = streams[streams.length - 1]!.streamId;
      accounts += streams.length;
      options.onProgress?.({ accounts, written });
    }
    return { dropped, written };
  }

  return {
    open,
    get,
    deposit: (accountId: string, amount: number, options: WriteOptions = {}) => move(accountId, ACCOUNT_DEPOSITED, amount, options),
    withdraw: (accountId: string, amount: number, options: WriteOptions = {}) => move(accountId, ACCOUNT_WITHDRAWN, amount, options),
    events,
    rebuildSnapshots,
  };
}

export type AccountLedger = ReturnType<typeof createAccountLedger>;
