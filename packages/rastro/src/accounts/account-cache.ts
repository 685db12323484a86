import type { Account } from './account.js';

/** A remembered account: its committed state at a version, that version's head, and whether another writer was seen on it. */
export interface CachedAccount {
  account: Account;
  /**
   * The stream's head at the account's version (its last event's trail link): a read or a write
   * that finds another head there finds another history of the stream than the one remembered
   * (a standby promoted behind its primary, which lost the last appends).
   */
  head: string;
  /**
   * A write at the remembered version lost to another writer (another process, or a caller's
   * transaction): the next write reads what was appended since first, instead of guessing.
   */
  contended: boolean;
}

/**
 * The folded state of the accounts this process used last, at most `size` of them (least
 * recently used first out). Like a snapshot it is a cache of what the events say, never the
 * truth: a write appends at the remembered version and head, so the store refuses it when the
 * account moved on, and a read asks for the events after that version, and for the head there.
 * Only committed state goes in.
 */
export class AccountCache {
  private readonly entries = new Map<string, CachedAccount>();

  constructor(private readonly size: number) {}

  get(accountId: string): CachedAccount | undefined {
    const entry = this.entries.get(accountId);
    if (entry) {
      this.entries.delete(accountId);
      this.entries.set(accountId, entry);
    }
    return entry;
  }

  /**
   * Keeps `account` at `head` unless a later version is remembered; `contended` as given, else as
   * it was. Without a head (events from before the trail) the account is not kept.
   */
  remember(account: Account, head: string | null, contended?: boolean): void {
    if (this.size === 0) return;
    const known = this.entries.get(account.id);
    if (head === null) {
      if (known && known.account.version <= account.version) this.entries.delete(account.id);
      return;
    }
    if (known && known.account.version > account.version) return;
    this.entries.delete(account.id);
    this.entries.set(account.id, { account, head, contended: contended ?? known?.contended ?? false });
    if (this.entries.size > this.size) this.entries.delete(this.entries.keys().next().value!);
  }

  markContended(accountId: string): void {
    const known = this.entries.get(accountId);
    if (known) known.contended = true;
  }

  forget(accountId: string): void {
    this.entries.delete(accountId);
  }

  clear(): void {
    this.entries.clear();
  }
}
