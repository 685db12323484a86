import { describe, expect, it } from 'vitest';
import { sameJson } from '../../packages/rastro/src/processing/state-writes.js';

// A write whose document is "the same" as the stored one is skipped, so a false "same" would lose
// a write. Stored documents come back from the database as parsed JSON.
describe('sameJson: whether a document would store what is already there', () => {
  const stored = (doc: unknown) => JSON.parse(JSON.stringify(doc)) as unknown;

  it('is the same for equal JSON data, whatever the key order', () => {
    expect(sameJson(stored({ a: 1, b: [1, { c: 'x' }], d: null }), { d: null, b: [1, { c: 'x' }], a: 1 })).toBe(true);
    expect(sameJson(stored({}), {})).toBe(true);
  });

  it('differs on any changed, added or missing value', () => {
    const before = stored({ orderId: 'o1', commissionCents: 5 });
    expect(sameJson(before, { orderId: 'o1', commissionCents: 50 })).toBe(false);
    expect(sameJson(before, { orderId: 'o1' })).toBe(false);
    expect(sameJson(before, { orderId: 'o1', commissionCents: 5, extra: true })).toBe(false);
    expect(sameJson(stored({ list: [1, 2] }), { list: [1, 2, 3] })).toBe(false);
    expect(sameJson(stored({ list: [1, 2] }), { list: { 0: 1, 1: 2 } })).toBe(false);
    expect(sameJson(stored({ n: 1 }), { n: '1' })).toBe(false);
  });

  it('counts values JSON would write differently as different, never as the same', () => {
    // A Date has no own keys: compared structurally it would look like {}.
    expect(sameJson(stored({ at: {} }), { at: new Date(0) })).toBe(false);
    expect(sameJson(stored({ at: '1970-01-01T00:00:00.000Z' }), { at: new Date(0) })).toBe(false);
    expect(sameJson(stored({}), { gone: undefined })).toBe(false);
    class Money {
      cents = 5;
    }
    expect(sameJson(stored({ price: { cents: 5 } }), { price: new Money() })).toBe(false);
  });
});
