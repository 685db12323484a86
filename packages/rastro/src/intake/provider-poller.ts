import { ProviderError, ValidationError } from '../errors.js';
import type { SnapshotIntake } from './snapshot-intake.js';

export interface PollOptions {
  /** The provider's name: the `source` of the snapshots. */
  source: string;
  /** The provider's REST API, e.g. `https://api.provider.example/v1`. Pages come from `GET <baseUrl>/orders?page=N&pageSize=K`. */
  baseUrl: string;
  /** Sent as `Authorization: Bearer <apiKey>`. */
  apiKey?: string;
  /** @defaultValue 100 */
  pageSize?: number;
  /** Stops after this many pages. @defaultValue 10000 */
  maxPages?: number;
  /** Called after each page is stored. */
  onPage?: (page: PollProgress) => void;
}

export interface PollProgress {
  page: number;
  /** Snapshots stored so far (a redelivery counts: the store keeps it once). */
  stored: number;
  /** Items the provider sent that are not valid snapshots, with why. */
  rejected: { orderId: unknown; reason: string }[];
}

interface OrdersPage {
  orders: unknown[];
  nextPage: number | null;
}

async function fetchPage(options: PollOptions, page: number): Promise<OrdersPage> {
  const url = `${options.baseUrl.replace(/\/$/, '')}/orders?page=${page}&pageSize=${options.pageSize ?? 100}`;
  let response: Response;
  try {
    response = await fetch(url, { headers: { accept: 'application/json', ...(options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {}) } });
  } catch (err) {
    throw new ProviderError(`cannot reach the provider at ${options.baseUrl}: ${(err as Error).message}`, { cause: err });
  }
  if (!response.ok) throw new ProviderError(`the provider answered ${response.status} for page ${page}; try again later`);
  let body: unknown;
  try {
    body = await response.json();
  } catch {
    throw new ProviderError(`the provider's page ${page} is not JSON`);
  }
  const { orders, nextPage } = (body ?? {}) as Partial<OrdersPage>;
  if (!Array.isArray(orders) || !(nextPage === null || nextPage === undefined || (Number.isSafeInteger(nextPage) && nextPage > page))) {
    throw new ProviderError(`the provider's page ${page} is not { orders: [...], nextPage }`);
  }
  return { orders, nextPage: nextPage ?? null };
}

/**
 * Pages through the provider's REST API and stores each order on it as a `rest` snapshot. An
 * item that is not a valid snapshot is reported and skipped; the rest of the page is stored.
 *
 * @example
 * ```ts
 * const { stored } = await pollProvider(orders.intake, { source: 'pied', baseUrl: 'http://127.0.0.1:4020' })
 * ```
 */
export async function pollProvider(intake: SnapshotIntake, options: PollOptions): Promise<PollProgress> {
  const progress: PollProgress = { page: 0, stored: 0, rejected: [] };
  const maxPages = options.maxPages ?? 10_000;
  for (let page: number | null = 1; page !== null && progress.page < maxPages; ) {
    const { orders, nextPage } = await fetchPage(options, page);
    for (const item of orders) {
      try {
        await intake.record(options.source, 'rest', item);
        progress.stored++;
      } catch (err) {
        if (!(err instanceof ValidationError)) throw err;
        progress.rejected.push({ orderId: (item as { orderId?: unknown } | null)?.orderId, reason: err.message });
      }
    }
    progress.page++;
    options.onPage?.(progress);
    page = nextPage;
  }
  return progress;
}
