/**
 * What a field's name says about its values, read as words (as Presidio's and Google Sensitive
 * Data Protection's context words are): `home_tel`, `homeTel`, `home-tel` hold the word `tel`,
 * `hotelId` does not; `ssn` is a word of `ssn_last`, not of `businessNumber`. A name says a kind
 * (positive context) or says its values are codes, ids and counters (negative context: `gtin`,
 * `orderId`, `cellId`); the detectors raise or lower a value's likelihood by it (src/drift-guard/evidence.ts).
 *
 * The last word of a name is what the field is (`cellId` is an id, `phoneType` a type,
 * `customerPhone` a phone): a negative last word outweighs a positive word before it, unless the
 * two make one phrase that names personal data (`nationalId`, `taxId`, `personId`).
 */

/** context bits: the kinds a name speaks for */
export const CTX_PHONE = 1;
export const CTX_NATIONAL_ID = 2;
export const CTX_BIRTH = 4;
export const CTX_PERSON_NAME = 8;
export const CTX_CARD = 16;
export const CTX_ADDRESS = 32;
/** the name says its values are codes, ids, counters: not personal data unless the value proves it */
export const CTX_NEGATIVE = 64;
/** the name is an organisation's or a place's (`hotel`, `supplier`, `warehouse`): an address under it is a business's */
export const CTX_ORGANISATION = 128;
const POSITIVE = CTX_PHONE | CTX_NATIONAL_ID | CTX_BIRTH | CTX_PERSON_NAME | CTX_CARD | CTX_ADDRESS;

/**
 * A name's words, lower case without accents: camelCase, PascalCase, snake_case, kebab-case,
 * dots and digits split it (`IBANNumber` → iban, number; `addressLine2` → address, line, 2;
 * `prénom` → prenom). A name written as one lower-case word stays one (`homephone`).
 */
export function nameWords(name: string): string[] {
  return name
    .normalize('NFD')
    .replace(/\p{M}/gu, '')
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1 $2')
    .replace(/([A-Za-z])([0-9])/g, '$1 $2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((w) => w !== '' && !/^\d+$/.test(w));
}

/** words, and compounds written as one word, that speak for a kind */
const PHONE_WORD =
  /^(?:tel|tels|tele|telefon|telefono|telephone|fax|msisdn|mobile|mobiles|mobil|cell|cellular|handy|portable|gsm|sms|whatsapp|.*phone.*|(?:tel|mobile|cell|fax)(?:no|nr|num|number))$/;
const NATIONAL_WORD =
  /^(?:ssn|ssns|ssn(?:no|nr|num|number)|sin|nir|insee|secu|securite|nino|nin|nhs|bsn|cpr|pesel|dni|nif|nie|cpf|curp|aadhaar|aadhar|socialsecurity\w*|sozialversicherung\w*|nationalid\w*|nationalinsurance\w*|passport\w*|taxid|tin)$/;
const BIRTH_WORD = /^(?:dob|born|.*birth.*|.*geburt.*|.*naissance.*|.*nacimiento.*)$/;
const CARD_WORD =
  /^(?:pan|pans|cc|ccn|ccnum|(?:credit|debit|payment|bank)?cards?(?:no|nr|num|number|holder)?|creditcard\w*|kreditkarte\w*|carte|tarjeta|visa|mastercard|amex|maestro|payment|payments|instrument|pmt)$/;
const ADDRESS_WORD =
  /^(?:addr|address|addresses|adresse|adres|anschrift|direccion|indirizzo|street|streets|strasse|rue|calle|addressline|streetaddress|homeaddress|postaladdress|mailingaddress|residence|domicile)$/;
/** two words that name personal data together, though the second alone is negative */
const PHRASES: [first: RegExp, second: RegExp, bit: number][] = [
  [
    /^(?:national|tax|person|personal|citizen|resident|passport|social|insurance|health|patient|voter|driver|drivers)$/,
    /^(?:id|ids|number|no|nr|code)$/,
    CTX_NATIONAL_ID,
  ],
  [/^social$/, /^security$/, CTX_NATIONAL_ID],
  [/^(?:card|credit|debit)$/, /^(?:number|no|nr|num)$/, CTX_CARD],
];
/** address words a qualifier turns into something else: an IP or MAC address, a wallet, a server */
const NOT_POSTAL =
  /^(?:ip|ipv4|ipv6|mac|email|mail|e|wallet|server|host|hostname|remote|local|peer|client|network|net|web|url|contract|memory|mem|bluetooth|ble|hardware|hw|bitcoin|btc|eth|ethereum|crypto|node|bind|listen|broker|proxy|gateway|smtp|sender|recipient)$/;
/**
 * negative words: codes, identifiers and counts of things. `number`, `no`, `value`, `code`'s
 * neighbours stay neutral (a `phoneNumber` is a phone).
 */
const NEGATIVE_WORD =
  /^(?:id|ids|uid|uuid|guid|key|keys|gtin|gtins|ean|upc|sku|skus|sscc|isbn|issn|asin|mpn|plu|barcode|tracking|track|shipment|parcel|consignment|waybill|awb|order|orders|invoice|invoices|receipt|account|accounts|acct|tenant|subscription|project|org|organisation|organization|counter|count|counts|seq|sequence|serial|hash|checksum|crc|nonce|token|version|ver|rev|revision|ref|reference|batch|lot|voucher|coupon|promo|confirmation|booking|reservation|pnr|ticket|locator|claim|part|model|po|doc|document|identity|identifier|ident|imsi|transaction|txn|tx|session|request|trace|span|correlation|event|message|msg|ts|timestamp|time|epoch|nanos|micros|millis|ms|bytes|octets|packets|pkts|frames|errors|drops|total|amount|price|cost|qty|quantity|size|offset|port|vlan|asn|cid|eci|ecgi|cgi|lac|tac|enb|gnb|pci|mcc|mnc|imei|sku|gln|vat|ein|duns|lei|siren|siret|registration|reg|company|business|product|item|article|catalog|catalogue|store|warehouse|site|sensor|device|node|job|build|commit|sha|code|pin|zip|postcode|postal|sort|routing)$/;

const cache = new Map<string, number>();
const CACHE_MAX = 4096;

/** The context bits of a field name as written (`mobilePhone`, `hotel_id`, `nationalId`): computed once per distinct name. */
export function contextOf(name: string): number {
  if (name === '') return 0;
  let bits = cache.get(name);
  if (bits !== undefined) return bits;
  bits = contextOfWords(nameWords(name));
  // bounded: records with data as keys would otherwise grow it without end
  if (cache.size >= CACHE_MAX) cache.clear();
  cache.set(name, bits);
  return bits;
}

function contextOfWords(words: readonly string[]): number {
  if (words.length === 0) return 0;
  let positive = 0;
  let phraseEnd = -1;
  words.forEach((w, i) => {
    positive |= wordBits(w, words[i - 1]);
    const next = words[i + 1];
    if (next === undefined) return;
    for (const [first, second, bit] of PHRASES) {
      if (first.test(w) && second.test(next)) {
        positive |= bit;
        phraseEnd = i + 1;
      }
    }
  });
  if (PERSON_NAME_FIELDS.has(words.join('')) || suffixIsPersonName(words)) positive |= CTX_PERSON_NAME;
  const last = words.length - 1;
  const headNegative = NEGATIVE_WORD.test(words[last]!) && phraseEnd !== last && !(POSITIVE & wordBits(words[last]!, words[last - 1]));
  const organisation = words.some((w) => ORGANISATION_WORD.test(w)) ? CTX_ORGANISATION : 0;
  if (headNegative) return CTX_NEGATIVE | organisation;
  if (positive !== 0) return positive | organisation;
  return (words.some((w) => NEGATIVE_WORD.test(w)) ? CTX_NEGATIVE : 0) | organisation;
}

/** organisations and places: what holds a business's address, not a person's */
const ORGANISATION_WORD =
  /^(?:supplier|suppliers|vendor|vendors|merchant|merchants|seller|hotel|hotels|property|venue|store|stores|shop|shops|warehouse|warehouses|depot|company|companies|business|corporate|office|branch|site|facility|plant|factory|carrier|organisation|organization|org|employer|bank|agency|headquarters|hq|restaurant|airport|station|terminal|hub|manufacturer|brand|partner|dealer|retailer|distributor|clinic|hospital|school|university)$/;

function wordBits(w: string, before: string | undefined): number {
  let bits = 0;
  if (PHONE_WORD.test(w)) bits |= CTX_PHONE;
  if (NATIONAL_WORD.test(w)) bits |= CTX_NATIONAL_ID;
  if (BIRTH_WORD.test(w)) bits |= CTX_BIRTH;
  if (CARD_WORD.test(w)) bits |= CTX_CARD;
  if (ADDRESS_WORD.test(w) && !(before !== undefined && NOT_POSTAL.test(before)) && !/^(?:ip|mac|email|wallet|server|host)address/.test(w)) bits |= CTX_ADDRESS;
  return bits;
}

/**
 * Field names that hold a person's name, as one word (`fullName`, `first_name` → fullname,
 * firstname); `username`, `productName` and the like do not. A name ending in one of them does
 * too (`customerFullName`, `billing_last_name`).
 */
export const PERSON_NAME_FIELDS = new Set([
  'fullname',
  'firstname',
  'lastname',
  'surname',
  'surnames',
  'givenname',
  'givennames',
  'familyname',
  'forename',
  'forenames',
  'middlename',
  'maidenname',
  'customername',
  'clientname',
  'holdername',
  'cardholder',
  'cardholdername',
  'accountholder',
  'accountholdername',
  'contactname',
  'patientname',
  'employeename',
  'personname',
  'prenom',
  'vorname',
  'nachname',
  'nombre',
  'apellido',
  'apellidos',
  'cognome',
  'displayname',
  'legalname',
  'birthname',
  'recipientname',
  'sendername',
  'guestname',
  'passengername',
  'travellername',
  'travelername',
]);

function suffixIsPersonName(words: readonly string[]): boolean {
  for (let i = 1; i < words.length; i++) if (PERSON_NAME_FIELDS.has(words.slice(i).join(''))) return true;
  return false;
}

/** whether a name speaks for no kind and against none: a neighbour's or parent's name may then say what it is */
export function isNeutral(bits: number): boolean {
  return bits === 0;
}
