import type { FoldableEvent, Snapshot } from '../store/snapshots.js';

export const ACCOUNT_OPENED = 'AccountOpened';
export const ACCOUNT_DEPOSITED = 'AccountDeposited';
export const ACCOUNT_WITHDRAWN = 'AccountWithdrawn';

export const MAX_AMOUNT = 1_000_000_000;
export const MAX_OWNER_LENGTH = 200;

/** What an account's events fold into. Never stored as a column: snapshots are a cache of it. */
export interface AccountState {
  owner: string;
  createdAt: string;
  balance: number;
}

export interface Account extends AccountState {
  id: string;
  version: number;
}

export function accountStreamId(accountId: string): string {
  return `account-${accountId}`;
}

export const ACCOUNT_STREAM_PREFIX = 'account-';

function apply(state: AccountState | null, event: FoldableEvent): AccountState | null {
  const amount = typeof event.data.amount === 'number' ? event.data.amount : 0;
  switch (event.type) {
    case ACCOUNT_OPENED:
      return { owner: String(event.data.owner), createdAt: event.occurredAt.toISOString(), balance: 0 };
    case ACCOUNT_DEPOSITED:
      return state && { ...state, balance: state.balance + amount };
    case ACCOUNT_WITHDRAWN:
      return state && { ...state, balance: state.balance - amount };
    default:
      return state;
  }
}

/** Replays events on top of a snapshot. Returns null when the account was never opened. */
export function foldAccount(accountId: string, snapshot: Snapshot<AccountState> | null, events: FoldableEvent[]): Account | null {
  let state = snapshot?.state ?? null;
  let version = snapshot?.version ?? 0;
  for (const event of events) {
    state = apply(state, event);
    version = event.streamVersion;
  }
  return state && { id: accountId, version, ...state };
}
