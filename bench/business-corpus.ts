// The business corpus of bench:discover: records a company's topics carry that hold no personal
// data outside the example pipeline's mapped paths (email, cards[].number, profile.name), built
// from public standards so that their codes pass the checks real ones do — GS1 GTIN-8/12/13/14
// and SSCC-18 with their check digits and real GS1 prefixes (Germany 400–440, UK 50, UPC as EAN-13
// with a leading 0 or 00), carrier tracking numbers (UPS 1Z with its check digit, FedEx 12 and 15
// digits, USPS 22 digits, DHL 10, UPU S10), LTE and NR cell ids and CGIs, business registration
// numbers (SIREN and SIRET with Luhn, UK company numbers, US EINs, VAT ids, DUNS, LEIs with ISO
// 7064 check digits), cloud account ids (AWS 12 digits, GCP project numbers, Azure subscription
// GUIDs), 13/16/19-digit epoch times, 16-digit order ids, counters. Field names come in camelCase,
// snake_case and kebab-case. Seeded: the same corpus each run.
//
// `planted(i)` puts one personal value at an unmapped path of a business record: what the guard
// must find (the detection rate).

import { luhnDigit } from './discover-corpus.ts';
import { mulberry32 } from '../test/helpers/seeded-random.ts';

/** the corpus's seeded generator: the same corpus each run */
export const rng = mulberry32;

type R = () => number;
const int = (r: R, lo: number, hi: number) => lo + Math.floor(r() * (hi - lo + 1));
const pick = <T>(r: R, xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
const digits = (r: R, n: number) => Array.from({ length: n }, () => String(int(r, 0, 9))).join('');
const hex = (r: R, n: number) => Array.from({ length: n }, () => int(r, 0, 15).toString(16)).join('');
const guid = (r: R) => `${hex(r, 8)}-${hex(r, 4)}-4${hex(r, 3)}-${pick(r, ['8', '9', 'a', 'b'])}${hex(r, 3)}-${hex(r, 12)}`;

/** GS1 check digit (GTIN, SSCC, GLN): weights 3 and 1 from the right */
export function gs1Check(body: string): string {
  let sum = 0;
  for (let i = 0; i < body.length; i++) sum += Number(body[body.length - 1 - i]) * (i % 2 === 0 ? 3 : 1);
  return String((10 - (sum % 10)) % 10);
}

function luhnCheck(body: string): string {
  return String(luhnDigit(body));
}

/** GS1 prefixes as products carry them, weighted toward the big markets (and the ones the drift report named) */
const GS1_PREFIXES = [
  '000',
  '001',
  '003',
  '006',
  '007',
  '008',
  '009',
  '019',
  '300',
  '340',
  '376',
  '400',
  '405',
  '410',
  '419',
  '426',
  '437',
  '440',
  '450',
  '490',
  '500',
  '501',
  '502',
  '505',
  '509',
  '540',
  '560',
  '570',
  '590',
  '600',
  '690',
  '695',
  '700',
  '730',
  '760',
  '800',
  '803',
  '840',
  '870',
  '880',
  '890',
  '900',
  '930',
  '940',
  '978',
  '979',
];

function gtin13(r: R): string {
  const body = pick(r, GS1_PREFIXES) + digits(r, 9);
  return body + gs1Check(body);
}
/** a UPC-A written as GTIN-13 or GTIN-14: leading zeros */
function upcAsGtin(r: R, length: 13 | 14): string {
  const body = `${'0'.repeat(length - 12)}${int(r, 0, 9)}${digits(r, 10)}`;
  return body + gs1Check(body);
}
function upc12(r: R): string {
  const body = `${int(r, 0, 9)}${digits(r, 10)}`;
  return body + gs1Check(body);
}
function gtin8(r: R): string {
  const body = digits(r, 7);
  return body + gs1Check(body);
}
function gtin14(r: R): string {
  const body = `${int(r, 1, 8)}${pick(r, GS1_PREFIXES)}${digits(r, 9)}`;
  return body + gs1Check(body);
}
function sscc(r: R): string {
  const body = `${int(r, 0, 9)}${pick(r, GS1_PREFIXES)}${digits(r, 13)}`;
  return body + gs1Check(body);
}

/** UPS: 1Z, 6 shipper characters, 2 service digits, 7 package digits and a check digit */
function ups(r: R): string {
  const alnum = 'ABCDEFGHJKLMNPRSTUVWXYZ0123456789';
  const body = `${Array.from({ length: 6 }, () => pick(r, [...alnum])).join('')}${pick(r, ['01', '02', '03', '12', '13'])}${digits(r, 7)}`;
  let sum = 0;
  [...body].forEach((c, i) => {
    const v = /\d/.test(c) ? Number(c) : (c.charCodeAt(0) - 63) % 10;
    sum += i % 2 === 1 ? v * 2 : v;
  });
  return `1Z${body}${(10 - (sum % 10)) % 10}`;
}
function tracking(r: R): { carrier: string; number: string } {
  switch (int(r, 0, 5)) {
    case 0:
      return { carrier: 'UPS', number: ups(r) };
    case 1:
      return { carrier: 'FedEx', number: digits(r, 12) };
    case 2:
      return { carrier: 'FedEx Ground', number: digits(r, 15) };
    case 3:
      return { carrier: 'USPS', number: `94${digits(r, 20)}` };
    case 4:
      return { carrier: 'DHL', number: digits(r, 10) };
    default:
      return { carrier: 'Royal Mail', number: `${pick(r, ['RR', 'CP', 'LX'])}${digits(r, 9)}GB` };
  }
}

/** ISO 7064 mod 97-10 check digits of an LEI (18 characters + 2) */
function lei(r: R): string {
  const alnum = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';
  const body = `${digits(r, 4)}00${Array.from({ length: 12 }, () => pick(r, [...alnum])).join('')}`;
  const numeric = `${body}00`.replace(/[A-Z]/g, (c) => String(c.charCodeAt(0) - 55));
  return `${body}${String(98 - Number(BigInt(numeric) % 97n)).padStart(2, '0')}`;
}
function registration(r: R): Record<string, string> {
  const siren = digits(r, 8);
  const sirenFull = siren + luhnCheck(siren);
  const siretBody = sirenFull + digits(r, 4);
  switch (int(r, 0, 6)) {
    case 0:
      return { businessNumber: sirenFull, scheme: 'SIREN' };
    case 1:
      return { businessNumber: siretBody + luhnCheck(siretBody), scheme: 'SIRET' };
    case 2:
      return { businessNumber: pick(r, ['', 'SC', 'NI']) + digits(r, pick(r, [8, 6])), scheme: 'UK-CRN' };
    case 3:
      return { businessNumber: `${digits(r, 2)}-${digits(r, 7)}`, scheme: 'US-EIN' };
    case 4:
      return { businessNumber: `${pick(r, ['DE', 'FR', 'GB', 'NL', 'IT'])}${digits(r, 9)}`, scheme: 'VAT' };
    case 5:
      return { businessNumber: digits(r, 9), scheme: 'DUNS' };
    default:
      return { businessNumber: lei(r), scheme: 'LEI' };
  }
}

const epochMs = (r: R) => 1_700_000_000_000 + int(r, 0, 60_000_000_000);
const iso = (r: R) => new Date(epochMs(r)).toISOString();

function retailOrder(r: R, i: number): Record<string, unknown> {
  const lines = Array.from({ length: int(r, 1, 4) }, () => {
    const code = pick(r, ['gtin13', 'gtin13', 'upc13', 'upc14', 'upc12', 'gtin8', 'gtin14']);
    const gtin =
      code === 'gtin13'
        ? gtin13(r)
        : code === 'upc13'
          ? upcAsGtin(r, 13)
          : code === 'upc14'
            ? upcAsGtin(r, 14)
            : code === 'upc12'
              ? upc12(r)
              : code === 'gtin8'
                ? gtin8(r)
                : gtin14(r);
    return { gtin, sku: `SKU-${digits(r, 6)}`, qty: int(r, 1, 12), unitPrice: int(r, 99, 99_999) / 100 };
  });
  return {
    orderId: digits(r, 16),
    order_number: `${int(r, 1, 9)}${digits(r, 15)}`,
    invoiceNo: `INV-${2024 + (i % 3)}-${digits(r, 7)}`,
    storeId: int(r, 1000, 99_999),
    channel: pick(r, ['web', 'store', 'app']),
    lines,
    ean: gtin13(r),
    total: int(r, 100, 999_999) / 100,
    currency: pick(r, ['EUR', 'GBP', 'USD']),
    createdAt: iso(r),
    'created-ts': epochMs(r),
    voucherCode: digits(r, 15),
  };
}

function shipment(r: R): Record<string, unknown> {
  const t = tracking(r);
  return {
    shipmentId: guid(r),
    sscc: sscc(r),
    ssccWithAi: `00${sscc(r)}`,
    carrier: t.carrier,
    trackingNumber: t.number,
    tracking_id: digits(r, 12),
    consignment: { waybill: digits(r, 11), parcels: int(r, 1, 20), weightKg: int(r, 1, 30_000) / 10 },
    palletGtin: gtin14(r),
    depotId: digits(r, 6),
    events: Array.from({ length: int(r, 1, 3) }, () => ({ code: pick(r, ['PU', 'AR', 'DP', 'OD', 'DL']), at: iso(r), locationId: digits(r, 8) })),
  };
}

function telemetry(r: R): Record<string, unknown> {
  const mcc = pick(r, ['208', '234', '262', '310', '311', '440']);
  const mnc = pick(r, ['01', '10', '15', '410', '260']);
  const eci = int(r, 1, 268_435_455);
  return {
    deviceId: guid(r),
    ts: epochMs(r) * 1000 + int(r, 0, 999),
    ts_ns: `${epochMs(r)}${digits(r, 6)}`,
    network: {
      cellId: eci,
      nrCellId: int(r, 1, 68_719_476_735),
      cgi: `${mcc}-${mnc}-${int(r, 1, 65_535)}-${eci}`,
      mcc,
      mnc,
      tac: int(r, 1, 65_535),
      pci: int(r, 0, 503),
      rssi: -int(r, 40, 120),
      ecgi: `${mcc}${mnc}${eci.toString(16)}`,
    },
    counters: { bytesIn: int(r, 0, 2 ** 52), bytes_out: int(r, 0, 2 ** 52), packets: int(r, 0, 2 ** 40), errors: int(r, 0, 100) },
    firmware: `${int(r, 1, 9)}.${int(r, 0, 20)}.${int(r, 0, 300)}`,
    serialNumber: `SN${digits(r, 12)}`,
  };
}

function hotelBooking(r: R): Record<string, unknown> {
  return {
    bookingRef: `${String.fromCharCode(65 + int(r, 0, 25))}${String.fromCharCode(65 + int(r, 0, 25))}${digits(r, 6)}`,
    confirmationNumber: digits(r, pick(r, [10, 12, 16])),
    hotelId: int(r, 100_000, 99_999_999),
    hotel_id: digits(r, 9),
    hotelChainCode: pick(r, ['HI', 'MC', 'HH', 'AC']),
    roomTypeCode: pick(r, ['KNG', 'DBL', 'STE']),
    checkIn: iso(r).slice(0, 10),
    nights: int(r, 1, 14),
    rateCents: int(r, 5000, 90_000),
    rateCode: `R${digits(r, 4)}`,
    loyaltyTier: pick(r, ['silver', 'gold', 'platinum']),
    property: { propertyCode: digits(r, 5), gdsCode: `${pick(r, ['AMS', 'LON', 'NYC'])}${digits(r, 3)}` },
  };
}

function supplierRecord(r: R): Record<string, unknown> {
  return {
    supplier: {
      supplierId: digits(r, 8),
      ...registration(r),
      vatId: `DE${digits(r, 9)}`,
      duns: digits(r, 9),
      gln: (() => {
        const b = pick(r, GS1_PREFIXES) + digits(r, 9);
        return b + gs1Check(b);
      })(),
    },
    paymentTermsDays: pick(r, [30, 45, 60]),
    purchaseOrders: Array.from({ length: int(r, 1, 3) }, () => digits(r, 10)),
    categoryCode: digits(r, 8),
    approvedAt: iso(r),
  };
}

function cloudAudit(r: R): Record<string, unknown> {
  const account = digits(r, 12);
  return {
    eventID: guid(r),
    eventTime: iso(r),
    awsRegion: pick(r, ['eu-west-1', 'us-east-1']),
    recipientAccountId: account,
    userIdentity: { type: 'AssumedRole', accountId: account, principalId: `AROA${hex(r, 16).toUpperCase()}:session-${digits(r, 6)}` },
    resources: [{ ARN: `arn:aws:s3:::bucket-${digits(r, 6)}`, accountId: digits(r, 12) }],
    gcp: { projectNumber: digits(r, 12), project_id: `proj-${digits(r, 6)}` },
    azure: { subscriptionId: guid(r), tenantId: guid(r) },
    requestID: hex(r, 32),
    sourceIPAddress: `10.${int(r, 0, 255)}.${int(r, 0, 255)}.${int(r, 1, 254)}`,
  };
}

const KINDS = [retailOrder, shipment, telemetry, hotelBooking, supplierRecord, cloudAudit];

/** business record i: one of the kinds above, beside the mapped fields the example pipeline protects */
export function businessRecord(i: number): Record<string, unknown> {
  const r = rng(0x5eed0000 + i);
  const kind = KINDS[i % KINDS.length]!;
  return { email: `buyer.${i}@example.com`, cards: [{ number: '4111111111111111' }], profile: { name: 'Ann Lee' }, ...kind(r, i) };
}

/** the kind of business record i, for per-kind tallies */
export function businessKind(i: number): string {
  return KINDS[i % KINDS.length]!.name;
}

function visa(r: R): string {
  const body = `4${digits(r, 14)}`;
  return body + luhnCheck(body);
}
function maestro6304(r: R): string {
  const body = `6304${digits(r, 11)}`;
  return body + luhnCheck(body);
}
function gbIban(r: R): string {
  const bban = `NWBK${digits(r, 14)}`;
  const numeric = `${bban}GB00`.replace(/[A-Z]/g, (c) => String(c.charCodeAt(0) - 55));
  return `GB${String(98 - Number(BigInt(numeric) % 97n)).padStart(2, '0')}${bban}`;
}
function nir(r: R): string {
  const body = `${int(r, 1, 2)}${digits(r, 2)}${String(int(r, 1, 12)).padStart(2, '0')}${String(int(r, 1, 95)).padStart(2, '0')}${digits(r, 3)}${digits(r, 3)}`;
  return body + String(97 - Number(BigInt(body) % 97n)).padStart(2, '0');
}
function ssn(r: R): string {
  return `${int(r, 100, 665)}-${String(int(r, 1, 99)).padStart(2, '0')}-${String(int(r, 1, 9999)).padStart(4, '0')}`;
}

/** the personal values planted at unmapped paths, each with its path, a realistic drifted name, and its kind */
const PLANTS: [path: string, kind: string, value: (r: R, i: number) => unknown][] = [
  ['backupEmail', 'email', (_r, i) => `backup.${i}@example.org`],
  ['contact.mobile', 'phone', (r) => `07${int(r, 400, 999)} ${digits(r, 6)}`],
  ['home_tel', 'phone', (r) => `+44 20 7${digits(r, 3)} ${digits(r, 4)}`],
  ['extra.mobile', 'phone', (r) => `06 ${digits(r, 2)} ${digits(r, 2)} ${digits(r, 2)} ${digits(r, 2)}`],
  ['payment.cardNumber', 'payment-card', (r) => visa(r)],
  ['pan', 'payment-card', (r) => maestro6304(r)],
  ['refund.card', 'payment-card', (r) => Number(visa(r))],
  ['iban', 'iban', (r) => gbIban(r)],
  ['ssn', 'us-ssn', (r) => ssn(r)],
  ['customer.ssn', 'us-ssn', (r) => ssn(r).replaceAll('-', '')],
  ['nir', 'fr-nir', (r) => nir(r)],
  ['nationalId', 'fr-nir', (r) => nir(r)],
  ['nino', 'uk-nino', (r) => `${pick(r, ['AB', 'JG', 'NE', 'PR'])}${digits(r, 6)}${pick(r, ['A', 'B', 'C', 'D'])}`],
  ['dateOfBirth', 'date-of-birth', (r) => `${int(r, 1940, 2005)}-${String(int(r, 1, 12)).padStart(2, '0')}-${String(int(r, 1, 28)).padStart(2, '0')}`],
  ['fullName', 'person-name', (r) => `${pick(r, ['Ann', 'Jean', 'Ola', 'Marta'])} ${pick(r, ['Lee', 'Dupont', 'Nordmann', 'García'])}`],
  ['attributes.fullName', 'person-name', (r) => `${pick(r, ['Ann', 'Jean'])} ${pick(r, ['Lee', 'Dupont'])}`],
  [
    'shipping.address',
    'postal-address',
    (r) => `${int(r, 1, 250)} ${pick(r, ['High Street', 'Rue de la Paix', 'Main St'])}, ${pick(r, ['London', 'Paris', 'Boston'])}`,
  ],
  ['byEmail', 'email', (_r, i) => ({ [`key.${i}@example.net`]: { since: 2020 } })],
];

/** business record i with one personal value planted at an unmapped path: the record, the path and kind the guard must report */
export function planted(i: number): { record: Record<string, unknown>; path: string; kind: string } {
  const r = rng(0xbad00000 + i);
  const [path, kind, value] = PLANTS[i % PLANTS.length]!;
  const record = businessRecord(i);
  const steps = path.split('.');
  let node = record;
  for (const step of steps.slice(0, -1)) node = (node[step] ??= {}) as Record<string, unknown>;
  node[steps.at(-1)!] = value(r, i);
  return { record, path: kind === 'email' && path === 'byEmail' ? 'byEmail.*' : path, kind };
}
