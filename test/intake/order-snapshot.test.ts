import { describe, expect, it } from 'vitest';
import { parseLastUpdate, parseOrderKey, parseOrderSnapshot, snapshotEventId } from '../../packages/rastro/src/intake/order-snapshot.js';

describe('order snapshots', () => {
  it('parses every precision and offset to the instant it names', () => {
    const cases: [string, string][] = [
      ['2026-09-08T11:54:24.512Z', '2026-09-08T11:54:24.512Z'],
      ['2026-09-08T08:54:24-03:00', '2026-09-08T11:54:24.000Z'],
      ['2026-09-08T08:54:24.5-0300', '2026-09-08T11:54:24.500Z'],
      ['2026-09-08T14:54:24.123456789+03', '2026-09-08T11:54:24.123Z'],
      ['2026-09-08 11:54:24z', '2026-09-08T11:54:24.000Z'],
      ['2026-09-08T17:24:24,5+05:30', '2026-09-08T11:54:24.500Z'],
      ['2026-09-07T23:54:24-12:00', '2026-09-08T11:54:24.000Z'],
    ];
    for (const [text, iso] of cases) expect(parseLastUpdate(text).toISOString(), text).toBe(iso);
  });

  it('refuses a lastUpdate it cannot place in time, naming the field', () => {
    for (const text of ['', 'yesterday', '2026-09-08T08:54:24', '2026-09-08', '2026-02-30T10:00:00Z', '2026-09-08T24:00:00Z', '2026-09-08T10:00:61Z', '2026-09-08T10:00:00+25:00', '1757332464']) {
      expect(() => parseLastUpdate(text), text).toThrow(/lastUpdate: is not a date-time with an offset/);
    }
    expect(() => parseOrderSnapshot('pied', 'webhook', { orderId: '1', status: 'received', lastUpdate: 1757332464 })).toThrow(/lastUpdate/);
  });

  it('validates the order id, the status and the source, and keeps everything else as the payload', () => {
    const snapshot = parseOrderSnapshot('pied', 'rest', { orderId: 260065713, status: 'received', lastUpdate: null, invoice: { n: 1 }, extra: [1] });
    expect(snapshot).toEqual({ source: 'pied', channel: 'rest', orderId: '260065713', status: 'received', lastUpdate: null, lastUpdateText: null, payload: { invoice: { n: 1 }, extra: [1] } });
    expect(() => parseOrderSnapshot('pied', 'rest', { status: 'received' })).toThrow(/orderId/);
    expect(() => parseOrderSnapshot('pied', 'rest', { orderId: 'a b', status: 'received' })).toThrow(/orderId/);
    expect(() => parseOrderSnapshot('pied', 'rest', { orderId: '1', status: 'paid' })).toThrow(/status: must be one of/);
    expect(() => parseOrderSnapshot('Pied!', 'rest', { orderId: '1', status: 'received' })).toThrow(/source/);
    expect(() => parseOrderSnapshot('pied', 'rest', [1])).toThrow(/body/);
  });

  it('derives the same event id for the same snapshot, whatever the key order, and another for any difference', () => {
    const a = parseOrderSnapshot('pied', 'webhook', { orderId: '1', status: 'received', lastUpdate: '2026-09-08T11:54:24.512Z', invoice: { n: 1, s: 'x' } });
    const b = parseOrderSnapshot('pied', 'webhook', { invoice: { s: 'x', n: 1 }, lastUpdate: '2026-09-08T11:54:24.512Z', status: 'received', orderId: '1' });
    expect(snapshotEventId(a)).toBe(snapshotEventId(b));
    expect(snapshotEventId(a)).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    const others = [
      parseOrderSnapshot('pied', 'rest', { orderId: '1', status: 'received', lastUpdate: '2026-09-08T11:54:24.512Z', invoice: { n: 1, s: 'x' } }),
      parseOrderSnapshot('pied', 'webhook', { orderId: '1', status: 'received', lastUpdate: '2026-09-08T11:54:24.513Z', invoice: { n: 1, s: 'x' } }),
      parseOrderSnapshot('pied', 'webhook', { orderId: '1', status: 'received', lastUpdate: '2026-09-08T11:54:24.512Z', invoice: { n: 2, s: 'x' } }),
      parseOrderSnapshot('other', 'webhook', { orderId: '1', status: 'received', lastUpdate: '2026-09-08T11:54:24.512Z', invoice: { n: 1, s: 'x' } }),
    ];
    expect(new Set([a, ...others].map(snapshotEventId)).size).toBe(5);
  });

  it('reads an order id as <source>:<orderId>', () => {
    expect(parseOrderKey('pied:260065713')).toEqual({ source: 'pied', orderId: '260065713' });
    expect(() => parseOrderKey('260065713')).toThrow(/<source>:<orderId>/);
    expect(() => parseOrderKey('pied:')).toThrow(/id/);
  });
});
