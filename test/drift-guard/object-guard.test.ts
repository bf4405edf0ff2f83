import { describe, expect, it } from 'vitest';
import { allowedPath } from '../../src/drift-guard/json-guard.ts';
import { ObjectGuard } from '../../src/drift-guard/object-guard.ts';

const MAPPED = ['email', 'cards[].number', 'profile.name'];
const found = (record: unknown, guard = new ObjectGuard(MAPPED, [], false)) => guard.findings(record).map((f) => [f.path, f.kind, f.key]);

describe('ObjectGuard: the unmapped guard over decoded (Avro, Protobuf) records', () => {
  it('finds personal data at unmapped paths, never at mapped ones', () => {
    expect(found({ email: 'a@example.com', cards: [{ number: '4111111111111111' }], profile: { name: 'Ann Lee' } })).toEqual([]);
    expect(
      found({ email: 'a@example.com', backup_email: 'b@example.com', cards: [{ number: '4111111111111111', holder_iban: 'GB82WEST12345698765432' }] }),
    ).toEqual([
      ['backup_email', 'email', false],
      ['cards[].holder_iban', 'iban', false],
    ]);
  });

  it('reads integers (number and bigint) as their digits, bytes as their UTF-8 text; skips fractions, negatives and bytes that are no text', () => {
    expect(found({ card_number: 4111111111111111n, pan: 4111111111111111, b: new Uint8Array([0x34, 0x31]), f: 1.5, n: -4111111111111111n })).toEqual([
      ['card_number', 'payment-card', false],
      ['pan', 'payment-card', false],
    ]);
    expect(found({ blob: Buffer.from('ann@example.com'), raw: new Uint8Array([0xff, 0x40, 0x61, 0x62, 0x63, 0x64]) })).toEqual([['blob', 'email', false]]);
  });

  it("grades bare digits by their field's name: a card in a card field, not in an order id, a GTIN or a neutral field at the default threshold", () => {
    expect(found({ orderId: '4111111111111111', gtin: '4006381333931', other: '4111111111111111', payment: { number: '4111111111111111' } })).toEqual([
      ['payment.number', 'payment-card', false],
    ]);
    expect(found({ other: '4111111111111111' }, new ObjectGuard(MAPPED, [], false, 3))).toEqual([['other', 'payment-card', false]]);
    // grouped as cards are printed: a card anywhere
    expect(found({ other: '4111 1111 1111 1111' })).toEqual([['other', 'payment-card', false]]);
  });

  it('a map key names its value as a field name does (Avro maps decode to objects, Protobuf maps to Maps)', () => {
    expect(found({ attributes: { mobile: '07911 123456', fullName: 'Ann Lee', address: '10 Downing Street, London' } })).toEqual([
      ['attributes.mobile', 'phone', false],
      ['attributes.fullName', 'person-name', false],
      ['attributes.address', 'postal-address', false],
    ]);
    expect(found({ attributes: new Map([['home_tel', '020 7946 0958']]) })).toEqual([['attributes.home_tel', 'phone', false]]);
  });

  it('map keys that are data show as * and are key findings; maps (Map) too', () => {
    expect(found({ by_email: { 'x@example.com': 1 } })).toEqual([['by_email.*', 'email', true]]);
    expect(found({ by_email: new Map([['y@example.com', 'v']]) })).toEqual([['by_email.*', 'email', true]]);
  });

  it('names hint: a phone in a phone-named field, a person name in a name-hinted one', () => {
    expect(found({ mobile_phone: '020 7946 0958', last_name: 'Lovelace', product_name: 'Steel Car' })).toEqual([
      ['mobile_phone', 'phone', false],
      ['last_name', 'person-name', false],
    ]);
  });

  it('allowed paths and everything under them are not looked at; fold matches case', () => {
    const guard = new ObjectGuard(MAPPED, [allowedPath('audit'), allowedPath('items[].sku')], true);
    expect(found({ Audit: { by: 'ops@example.com' }, items: [{ sku: 'x@example.com' }], EMAIL: 'a@example.com' }, guard)).toEqual([]);
  });

  it('gives the parent and key of a value finding, to protect it in place', () => {
    const record = { contact: { email: 'b@example.com' } };
    const [f] = new ObjectGuard(MAPPED, [], false).findings(record);
    expect(f!.parent).toBe(record.contact);
    expect(f!.at).toBe('email');
  });
});
