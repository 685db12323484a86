import type { EffectTypes } from 'rastro/internal/processing/ledger/effect-type.js';
import { defineProcessor, type Processor } from 'rastro/internal/processing/processor.js';

export const ORDER_PAID = 'order.paid';
export const NOTIFY_SELLER = 'notify-seller';
export const NOTIFY_FINANCE = 'notify-finance';

/** commission = round(amountCents × percent / 100). The deployed bug divided by 1,000. */
export function commissionCents(amountCents: number, percent: number, divisor = 100): number {
  if (!Number.isInteger(amountCents) || typeof percent !== 'number') throw new Error('invalid order.paid payload');
  return Math.round((amountCents * percent) / divisor);
}

export interface Notifier {
  notify(notification: { orderId: string; commissionCents: number }, idempotencyKey: string): Promise<unknown>;
  /** Whether the provider sent the notification with this key (a provider that can be asked). */
  lookup?(idempotencyKey: string): Promise<boolean>;
}

/**
 * The story's processor: on `order.paid` ({ orderId, amountCents, percent }, stream version =
 * the order's version) it writes the commission with a version guard and notifies the seller.
 * `divisor: 1000` is the bug that went to production. With `finance`, a second effect reports
 * the commission to a provider that deduplicates by key. With `askProvider`, the seller
 * notification's provider is asked about uncertain notifications (reconciliation) instead of
 * leaving them to a person; `settleMs` is how long a notification may still be on its way.
 */
export function commissionProcessor(
  notifier: Notifier,
  { divisor = 100, finance, askProvider = false, settleMs = 10_000 }: { divisor?: number; finance?: Notifier; askProvider?: boolean; settleMs?: number } = {},
): Processor {
  const lookup = notifier.lookup?.bind(notifier);
  if (askProvider && !lookup) throw new Error('askProvider needs a notifier with lookup');
  const effects: EffectTypes | undefined = askProvider
    ? {
        [NOTIFY_SELLER]: {
          settleMs,
          reconcile: async (key) => ((await lookup!(key)) ? { status: 'happened' } : { status: 'did-not-happen' }),
        },
      }
    : undefined;
  return defineProcessor({
    name: 'commissions',
    ...(effects ? { effects } : {}),
    handlers: {
      [ORDER_PAID]: async (event, ctx) => {
        const { orderId, amountCents, percent } = event.data as { orderId: string; amountCents: number; percent: number };
        const cents = commissionCents(amountCents, percent, divisor);
        await ctx.upsert('commission', orderId, { orderId, commissionCents: cents }, { version: event.streamVersion });
        await ctx.effect(NOTIFY_SELLER, (key) => notifier.notify({ orderId, commissionCents: cents }, key));
        if (finance) await ctx.effect(NOTIFY_FINANCE, (key) => finance.notify({ orderId, commissionCents: cents }, key));
      },
    },
  });
}
