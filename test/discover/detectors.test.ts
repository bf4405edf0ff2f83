import { describe, expect, it } from 'vitest';
import {
  isDateOfBirth,
  isEmail,
  isFrNir,
  isIban,
  isIpAddress,
  isPaymentCard,
  isPersonName,
  isPhone,
  isUkNino,
  isUsSsn,
  luhnValid,
  normaliseName,
} from '../../src/discover/detectors.ts';

const field = (name: string) => ({ name: normaliseName(name) });

describe('discover detectors: validators, not patterns', () => {
  it("payment cards: issuers' test numbers pass; a changed digit (Luhn) or a range no issuer uses does not", () => {
    for (const n of [
      '4111111111111111',
      '5555555555554444',
      '2223003122003222',
      '378282246310005',
      '6011111111111117',
      '3530111333300000',
      '30569309025904',
      '6200000000000005',
      '4111 1111 1111 1111',
      '4111-1111-1111-1111',
    ])
      expect(isPaymentCard(n), n).toBe(true);
    expect(luhnValid('1234567812345670')).toBe(true);
    for (const n of ['4111111111111112', '1234567812345670', '411111111111111', '4111 1111 1111 11112', '9999999999999995', 'abcd'])
      expect(isPaymentCard(n), n).toBe(false);
  });

  it("IBANs: the registry's examples pass (with or without spaces); a changed character, an unknown country or a wrong length does not", () => {
    for (const n of [
      'GB82WEST12345698765432',
      'DE89370400440532013000',
      'FR1420041010050500013M02606',
      'NL91ABNA0417164300',
      'GB82 WEST 1234 5698 7654 32',
      'gb82west12345698765432',
    ])
      expect(isIban(n), n).toBe(true);
    for (const n of ['GB82WEST12345698765433', 'GB28WEST12345698765432', 'XX82WEST12345698765432', 'DE8937040044053201300', 'GB82WEST1234569876543'])
      expect(isIban(n), n).toBe(false);
  });

  it("French NIR: the key is 97 − (number mod 97), Corsica's 2A/2B included", () => {
    expect(isFrNir('255081416802538')).toBe(true);
    expect(isFrNir('2 55 08 14 168 025 38')).toBe(true);
    expect(isFrNir('255081416802539')).toBe(false);
    expect(isFrNir('555081416802538')).toBe(false); // no such sex digit
    const corsica = '185052A123456';
    const key = 97 - Number(BigInt(corsica.replace('2A', '19')) % 97n);
    expect(isFrNir(`${corsica}${String(key).padStart(2, '0')}`)).toBe(true);
    expect(isFrNir(`${corsica}${String((key % 97) + 1).padStart(2, '0')}`)).toBe(false);
  });

  it("UK NINO: HMRC's allowed prefixes; the documentation example QQ and the administrative prefixes are refused", () => {
    for (const n of ['AB123456C', 'AB 12 34 56 C', 'ce123456a', 'JG103759A']) expect(isUkNino(n), n).toBe(true);
    for (const n of ['QQ123456C', 'GB123456A', 'AB123456E', 'DA123456A', 'AO123456A', 'AB12345C']) expect(isUkNino(n), n).toBe(false);
  });

  it('US SSN: never-issued areas, groups and serials are refused; nine bare digits only in a field named so', () => {
    expect(isUsSsn('123-45-6789', field('x'))).toBe(true);
    for (const n of ['000-12-3456', '666-12-3456', '900-12-3456', '123-00-4567', '123-45-0000']) expect(isUsSsn(n, field('ssn')), n).toBe(false);
    expect(isUsSsn('123456789', field('ssn'))).toBe(true);
    expect(isUsSsn('123456789', field('socialSecurityNumber'))).toBe(true);
    expect(isUsSsn('123456789', field('orderId'))).toBe(false);
  });

  it('emails: syntax of a deliverable address; text that merely holds an @ is not one', () => {
    for (const v of ['alice@example.com', "o'brien+tag@mail.example.co.uk", 'x@sub-domain.example.org']) expect(isEmail(v), v).toBe(true);
    for (const v of ['alice@', '@example.com', 'alice@example', 'alice@@example.com', 'a..b@example.com', 'call me at alice@example.com', 'alice@-example.com'])
      expect(isEmail(v), v).toBe(false);
  });

  it('phones: valid for their country in the full metadata; national numbers only in a field named for phones', () => {
    for (const v of ['+44 20 7946 0958', '+1 650-253-0000', '+33 1 42 68 53 00', '0033 1 42 68 53 00', '+49 30 901820'])
      expect(isPhone(v, field('x')), v).toBe(true);
    expect(isPhone('020 7946 0958', field('phone'))).toBe(true);
    expect(isPhone('020 7946 0958', field('reference'))).toBe(false);
    for (const v of ['+44 12', '+1 000-000-0000', '2.14.3', '2024-01-02']) expect(isPhone(v, field('phone')), v).toBe(false);
  });

  it('IP addresses: IPv4 and IPv6; version strings and out-of-range octets are not', () => {
    for (const v of ['192.168.0.1', '::1', '2001:db8::8a2e:370:7334']) expect(isIpAddress(v), v).toBe(true);
    for (const v of ['2.14.3', '256.1.1.1', '1.2.3.4.5', 'localhost']) expect(isIpAddress(v), v).toBe(false);
  });

  it('dates of birth: a real past date in a field named for birth; any date elsewhere is not one', () => {
    const today = new Date('2026-11-25T00:00:00Z');
    expect(isDateOfBirth('1984-02-29', field('dateOfBirth'), today)).toBe(true);
    expect(isDateOfBirth('29/02/1984', field('dob'), today)).toBe(true);
    expect(isDateOfBirth('12/31/1990', field('birth_date'), today)).toBe(true);
    for (const v of ['1983-02-29', '2999-01-01', '1850-01-01', '31/31/1990', 'yesterday']) expect(isDateOfBirth(v, field('dateOfBirth'), today), v).toBe(false);
    expect(isDateOfBirth('1984-02-01', field('createdAt'), today)).toBe(false);
  });

  it('person names: capitalised words (particles, accents, hyphens, apostrophes) in a field named for names', () => {
    for (const v of ['Jean-Luc Picard', 'Ludwig van Beethoven', 'Zoë Müller', "Siobhán O'Brien", 'Dr. María José de la Cruz', 'Ng'])
      expect(isPersonName(v, field('fullName')), v).toBe(true);
    for (const v of ['R2D2', 'ALICE123', 'alice@example.com', 'one two three four five six seven', ''])
      expect(isPersonName(v, field('fullName')), v).toBe(false);
    // a generic `name` is a person's only beside an email or a phone (a product has a name too)
    expect(isPersonName('Alice Martin', field('name'))).toBe(false);
    expect(isPersonName('Alice Martin', { ...field('name'), personalNeighbours: true })).toBe(true);
    expect(isPersonName('Ergonomic Steel Chair', field('productName'))).toBe(false);
    expect(isPersonName('alice_w', field('username'))).toBe(false);
  });
});
