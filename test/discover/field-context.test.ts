import { describe, expect, it } from 'vitest';
import {
  contextOf,
  CTX_ADDRESS,
  CTX_BIRTH,
  CTX_CARD,
  CTX_NATIONAL_ID,
  CTX_NEGATIVE,
  CTX_ORGANISATION,
  CTX_PERSON_NAME,
  CTX_PHONE,
  nameWords,
} from '../../src/discover/field-context.ts';
import { unmappedValueKind } from '../../src/drift-guard/value-kinds.ts';
import { cardNetwork, isPaymentCard } from '../../src/discover/detectors.ts';

describe('field-name context: words, not substrings', () => {
  it('splits camelCase, PascalCase, snake_case, kebab-case, dots and digits; drops accents', () => {
    expect(nameWords('hotelId')).toEqual(['hotel', 'id']);
    expect(nameWords('home_tel')).toEqual(['home', 'tel']);
    expect(nameWords('home-tel')).toEqual(['home', 'tel']);
    expect(nameWords('IBANNumber')).toEqual(['iban', 'number']);
    expect(nameWords('addressLine2')).toEqual(['address', 'line']);
    expect(nameWords('prénom')).toEqual(['prenom']);
    expect(nameWords('network.cellId')).toEqual(['network', 'cell', 'id']);
  });

  it("a kind's word inside another word is no context: hotelId, businessNumber, telemetry, adobe", () => {
    expect(contextOf('hotelId') & CTX_PHONE).toBe(0);
    expect(contextOf('businessNumber') & CTX_NATIONAL_ID).toBe(0);
    expect(contextOf('telemetry')).toBe(0);
    expect(contextOf('adobeVersion') & CTX_BIRTH).toBe(0);
  });

  it("the kind's word as a word is: home_tel, mobile, ssn_last, dateOfBirth, cardNumber, streetAddress, fullName", () => {
    for (const name of ['home_tel', 'homeTel', 'mobile', 'phoneNumber', 'homephone', 'msisdn', 'fax'])
      expect(contextOf(name) & CTX_PHONE, name).toBe(CTX_PHONE);
    for (const name of ['ssn', 'ssn_last', 'socialSecurityNumber', 'nir', 'nationalId', 'national_insurance_number', 'taxId'])
      expect(contextOf(name) & CTX_NATIONAL_ID, name).toBe(CTX_NATIONAL_ID);
    for (const name of ['dateOfBirth', 'dob', 'birth_date', 'geburtsdatum']) expect(contextOf(name) & CTX_BIRTH, name).toBe(CTX_BIRTH);
    for (const name of ['cardNumber', 'card_no', 'pan', 'creditCard', 'payment']) expect(contextOf(name) & CTX_CARD, name).toBe(CTX_CARD);
    for (const name of ['address', 'streetAddress', 'addressLine1', 'home_address', 'street']) expect(contextOf(name) & CTX_ADDRESS, name).toBe(CTX_ADDRESS);
    for (const name of ['fullName', 'last_name', 'customerFullName', 'cardholder']) expect(contextOf(name) & CTX_PERSON_NAME, name).toBe(CTX_PERSON_NAME);
  });

  it('negative context: codes, ids, counters; the last word is what a field is (cellId is an id, customerPhone a phone)', () => {
    for (const name of [
      'gtin',
      'ean13',
      'upc',
      'sku',
      'sscc',
      'trackingNumber',
      'orderId',
      'order_number',
      'invoiceNo',
      'accountId',
      'tenant',
      'bytesIn',
      'cellId',
      'network.cellId',
      'hotel_id',
      'phoneId',
      'confirmationNumber',
      'voucherCode',
      'businessNumber',
    ]) {
      expect(contextOf(name) & ~CTX_ORGANISATION, name).toBe(CTX_NEGATIVE);
    }
    expect(contextOf('customerPhone')).toBe(CTX_PHONE);
    expect(contextOf('accountHolder')).toBe(CTX_PERSON_NAME);
    expect(contextOf('nationalId')).toBe(CTX_NATIONAL_ID);
    expect(contextOf('ipAddress') & CTX_ADDRESS).toBe(0);
    expect(contextOf('email_address') & CTX_ADDRESS).toBe(0);
    expect(contextOf('number')).toBe(0);
  });
});

describe("grading: a value's evidence in its field's context, against the threshold", () => {
  const at = (text: string, name: string, threshold?: number) => unmappedValueKind(text, name, undefined, threshold);

  it('GTINs, UPCs written as EAN-13, SSCCs, order ids and account ids are not cards or phones at the default threshold', () => {
    expect(at('4006381333931', 'gtin')).toBeUndefined(); // a German GTIN-13 that passes Luhn in Visa's range
    expect(at('5012345678900', 'ean')).toBeUndefined(); // a UK GTIN-13 in Maestro's range
    expect(at('0012345678905', 'code')).toBeUndefined(); // a UPC as EAN-13: 00 + a valid US number
    expect(at('0012345678905', '')).toBeUndefined();
    expect(at('4111111111111111', 'orderId')).toBeUndefined();
    expect(at('4111111111111111', 'order_number')).toBeUndefined();
    expect(at('501234567894', 'accountId')).toBeUndefined();
    expect(at('185057800608491', 'voucherCode')).toBeUndefined(); // a valid NIR's digits
  });

  it('bare digits without context are possible, not likely: the threshold decides', () => {
    expect(at('4111111111111111', 'value')).toBeUndefined();
    expect(at('4111111111111111', 'value', 3)).toBe('payment-card');
    expect(at('185057800608491', 'extra', 3)).toBe('fr-nir');
  });

  it('formatting is evidence: grouped card digits, + before a phone, an SSN with dashes', () => {
    expect(at('4111 1111 1111 1111', 'value')).toBe('payment-card');
    expect(at('4111-1111-1111-1111', 'orderId')).toBe('payment-card');
    expect(at('+44 20 7946 0958', 'x')).toBe('phone');
    expect(at('0044 20 7946 0958', 'x')).toBe('phone');
    expect(at('123-45-6789', 'x')).toBe('us-ssn');
    expect(at('1 85 05 78 006 084 91', 'x')).toBe('fr-nir');
  });

  it('context is evidence: a card in a card field, a national phone in a phone field, nine digits in an SSN field', () => {
    expect(at('4111111111111111', 'cardNumber')).toBe('payment-card');
    expect(at('6304000000000000', 'pan')).toBe('payment-card');
    expect(at('020 7946 0958', 'home_tel')).toBe('phone');
    expect(at('020 7946 0958', 'hotelId')).toBeUndefined();
    expect(at('123456789', 'ssn')).toBe('us-ssn');
    expect(at('123456789', 'businessNumber')).toBeUndefined();
    expect(at('10 Downing Street, London', 'address')).toBe('postal-address');
    expect(at('10.0.0.1', 'ipAddress')).toBeUndefined();
  });

  it("an address under an organisation (a hotel, a supplier, a warehouse) is a business's; under a customer or no object, a person's", () => {
    const under = (parent: string) => unmappedValueKind('12 Industrial Way, Leeds', 'address', undefined, undefined, () => contextOf(parent));
    expect(under('hotel')).toBeUndefined();
    expect(under('supplier')).toBeUndefined();
    expect(under('warehouse')).toBeUndefined();
    expect(under('customer')).toBe('postal-address');
    expect(under('attributes')).toBe('postal-address');
    expect(contextOf('hotel') & CTX_ORGANISATION).toBe(CTX_ORGANISATION);
  });

  it("card networks come from credit-card-type: Maestro 6304 is one; Visa's old 13-digit numbers are a minor one", () => {
    expect(cardNetwork('6304000000000000')).toBe('other');
    expect(isPaymentCard('6304 0000 0000 0000')).toBe(true);
    expect(cardNetwork('4111111111111111')).toBe('major');
    expect(cardNetwork('4222222222222')).toBe('other');
    expect(cardNetwork('9222222222222')).toBe('none');
  });
});
