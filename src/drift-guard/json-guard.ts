import { foldKey, type JsonPath, type JsonPathStep } from '../json-bytes/paths.ts';
import {
  EV_STRING,
  keyText,
  leafText,
  TRAIT_AT,
  TRAIT_DIGIT,
  TRAIT_ESCAPE,
  type KeyName,
  type PlaceStep,
  type ScanPlace,
  type UnmappedVisitor,
} from '../json-bytes/scan.ts';
import {
  contextOf,
  LIKELY,
  mayBePersonal,
  mayBePersonalWithoutDigits,
  shapeOfBytes,
  unmappedKeyKind,
  unmappedValueKind,
  type GuardKind,
} from './value-kinds.ts';
import { pathSegment } from '../discover/index.ts';

/** Personal data where no mapping looks: the path (keys that are data shown as `*`) and kind — never the value. */
export interface UnmappedFinding {
  path: string;
  kind: GuardKind;
  /** the value's raw span (a string with its quotes, a number's digits), for a caller that protects it */
  start: number;
  end: number;
  /** the finding is an object key, not a value: it cannot be protected in place */
  key: boolean;
  /** the keys and array indexes from the root to the value (to the key, for a key): a JSON pointer's steps, for the caller only — it may hold data keys */
  trail: (string | number)[];
}

/** An allow-list entry: `notes` or `items[].sku` as steps (a key, or null for `[]`); it covers everything under it. */
export type AllowedPath = readonly PlaceStep[];

/** `items[].sku` → ['items', null, 'sku'] */
export function allowedPath(path: string): AllowedPath {
  return path.split('.').flatMap((part): PlaceStep[] => (part.endsWith('[]') ? [part.slice(0, -2), null] : [part]));
}

/**
 * An allow-list entry as a path the scan keeps quiet (CompileOptions.quiet): nothing under it is
 * shown to the guard, so the guard pays nothing for it. JsonGuard checks entries itself too, for
 * a scan compiled without them.
 */
export function quietPath(entry: AllowedPath): JsonPath {
  return entry.map((step): JsonPathStep => (step === null ? { kind: 'each' } : { kind: 'key', name: step }));
}

/**
 * How many findings one document reports at most, unless the caller says: the first names the
 * dead letter; past the limit the guard only marks the document truncated (a caller protecting
 * findings must then refuse it).
 */
const MAX_FINDINGS = 16;

/** the string traits that make a value more than plain words */
const PLAIN_MASK = TRAIT_DIGIT | TRAIT_AT | TRAIT_ESCAPE;

/**
 * The unmapped guard over a JSON document, as the scanner's visitor (scanJson): every string and
 * number no mapping names, and every object key, is checked by the guard's detectors unless an
 * allowed path covers it. Reused document after document (begin() clears it); findings are kept
 * in document order.
 */
export class JsonGuard implements UnmappedVisitor {
  readonly findings: UnmappedFinding[] = [];
  /** more findings than MAX_FINDINGS: the rest were not collected, so no caller may protect only these and pass the record */
  truncated = false;
  private readonly allow: readonly AllowedPath[];
  /** the same entries as the scanner compares keys (raw bytes, folded or not) */
  private readonly allowKeys: readonly (readonly (KeyName | null)[])[];
  private readonly fold: boolean;
  private readonly hints = new KeyHints();
  private readonly max: number;
  private readonly threshold: number;
  /** a key is checked without a field's hints: without a digit, `@` or escape it is no guarded kind, so the scanner need not show it */
  readonly keyTraits = PLAIN_MASK;

  /**
   * `fold`: allowed paths match keys case-insensitively, as the mapping's paths do (keys:
   * insensitive); `max`: findings kept per document; `threshold`: the likelihood (value-kinds.ts) a
   * finding needs
   */
  constructor(allow: readonly AllowedPath[], fold: boolean, max = MAX_FINDINGS, threshold = LIKELY) {
    this.fold = fold;
    this.max = max;
    this.threshold = threshold;
    this.allow = fold ? allow.map((p) => p.map((s) => (s === null ? null : foldKey(s)))) : allow;
    this.allowKeys = this.allow.map((p) => p.map((s) => (s === null ? null : { name: s, bytes: Buffer.from(s, 'utf8'), ...(fold ? { folded: true } : {}) })));
  }

  begin(): void {
    this.findings.length = 0;
    this.truncated = false;
  }

  value(b: Buffer, kind: number, start: number, end: number, place: ScanPlace): void {
    // nothing guarded is shorter than 5 characters (nor is a boolean); a number with a fraction,
    // an exponent or a sign is no identifier
    if (kind === EV_STRING ? end - start < 7 : end - start < 5 || !allDigits(b, start, end)) return;
    if (!this.truncated) this.check(b, kind, start, end, place);
  }

  private check(b: Buffer, kind: number, start: number, end: number, place: ScanPlace): void {
    const string = kind === EV_STRING;
    const from = string ? start + 1 : start;
    const to = string ? end - 1 : end;
    // most strings hold no `@`, no escape and fewer than 4 digits (the scanner counts): such a
    // value is no guarded kind unless its field is named for a person or an address
    if (
      string &&
      (place.stringTraits() & (TRAIT_AT | TRAIT_ESCAPE)) === 0 &&
      place.stringDigits() < 4 &&
      !this.fewDigitsMayBePersonal(b, from, to, place.stringDigits(), place)
    )
      return;
    const keyStart = place.keyStart();
    const keyEnd = keyStart < 0 ? -1 : place.keyEnd();
    const shape = shapeOfBytes(b, from, to);
    // the field's name matters to names (no digits), to numbers of 4 digits or more (dates,
    // phones, cards, national ids) and to addresses (letters and digits): most values need no
    // lookup of their key
    const named =
      keyStart >= 0 &&
      (shape.digits >= 4 ||
        (shape.digits > 0 && shape.letters > 1 && shape.separators > 0 && mayNameAnAddress(b, keyStart + 1, keyEnd - 1)) ||
        (shape.digits === 0 && mayNameAPerson(b, keyStart + 1, keyEnd - 1)));
    const hints = named ? this.hints.of(b, keyStart, keyEnd) : 0;
    if (!mayBePersonal(shape, hints)) return;
    // a candidate under an allowed path is not looked at (the detectors cost more than the steps)
    if (this.allow.length > 0 && this.allowedAt(place)) return;
    const name = keyStart < 0 ? '' : keyText(b, keyStart, keyEnd);
    const found = unmappedValueKind(leafText(b, kind, start, end), name, hints, this.threshold, () => parentContext(place.steps()));
    if (found !== undefined) this.report(place.trail(), found, start, end, false);
  }

  /**
   * mayBePersonal's gates for a string of fewer than 4 digits and no `@` or escape, before its
   * shape is counted: with no digit only a person's name in a field named so can be one; with 1
   * to 3 only an address in a field named so, or an IBAN's start (every other kind needs more digits).
   */
  private fewDigitsMayBePersonal(b: Buffer, from: number, to: number, digits: number, place: ScanPlace): boolean {
    if (digits === 0 && to - from > 80) return false;
    if (digits > 0 && to - from >= 15 && isDigit(b[from + 2]) && isDigit(b[from + 3])) return true;
    const keyStart = place.keyStart();
    if (keyStart < 0) return false;
    const keyEnd = place.keyEnd();
    if (digits > 0) return mayNameAnAddress(b, keyStart + 1, keyEnd - 1);
    return mayNameAPerson(b, keyStart + 1, keyEnd - 1) && mayBePersonalWithoutDigits(to - from, this.hints.of(b, keyStart, keyEnd));
  }

  key(b: Buffer, start: number, end: number, place: ScanPlace): void {
    if (this.truncated) return;
    if ((place.stringTraits() & PLAIN_MASK) === 0 || !mayBePersonal(shapeOfBytes(b, start + 1, end - 1), 0)) return;
    const found = unmappedKeyKind(keyText(b, start, end), this.threshold);
    if (found !== undefined) this.report(place.trail(), found, start, end, true);
  }

  private report(trail: (string | number)[], kind: GuardKind, start: number, end: number, key: boolean): void {
    const steps = trail.map((step) => (typeof step === 'number' ? null : step));
    if (this.allowed(steps)) return;
    if (this.findings.length >= this.max) {
      this.truncated = true;
      return;
    }
    this.findings.push({ path: formatPath(steps, key), kind, start, end, key, trail });
  }

  /** allowed() of the place's steps, compared on the keys' bytes (nothing decoded) */
  private allowedAt(place: ScanPlace): boolean {
    const count = place.stepCount();
    return this.allowKeys.some((entry) => {
      if (entry.length > count) return false;
      for (let i = 0; i < entry.length; i++) if (!place.stepIs(i, entry[i]!)) return false;
      return true;
    });
  }

  private allowed(steps: readonly PlaceStep[]): boolean {
    return this.allow.some(
      (entry) =>
        entry.length <= steps.length &&
        entry.every((s, i) => {
          const step = steps[i]!;
          if (s === null || step === null) return s === step;
          return s === (this.fold ? foldKey(step) : step);
        }),
    );
  }
}

/**
 * The context (contextOf) of the object holding a value: the field name before the value's own
 * (`card` for `payment.card.number`, `contact` for `contact.phones[]`); 0 at the top.
 */
export function parentContext(steps: readonly PlaceStep[]): number {
  let own = false;
  for (let i = steps.length - 1; i >= 0; i--) {
    const step = steps[i];
    if (step === null || step === undefined) continue;
    if (own) return contextOf(step);
    own = true;
  }
  return 0;
}

/** steps as a pipeline path: `profile.contacts[].email`; a key that is data (or no field name) shows as `*` */
export function formatPath(steps: readonly PlaceStep[], lastIsDataKey = false): string {
  let out = '';
  steps.forEach((step, i) => {
    if (step === null) out += '[]';
    else {
      const segment = lastIsDataKey && i === steps.length - 1 ? '*' : pathSegment(step);
      out += out === '' ? segment : `.${segment}`;
    }
  });
  return out;
}

/**
 * contextOf by a key's raw bytes, without decoding it: records repeat the same few keys, and a
 * string per value would cost more than the guard's checks. A direct-mapped cache of KEY_SLOTS
 * keys (a colliding key replaces the one in its slot), so it stays bounded whatever keys come.
 */
const KEY_SLOTS = 1024;
class KeyHints {
  private readonly keys: (Buffer | undefined)[] = new Array<Buffer | undefined>(KEY_SLOTS).fill(undefined);
  private readonly hints = new Int32Array(KEY_SLOTS);

  of(b: Buffer, start: number, end: number): number {
    let h = 0x811c9dc5;
    for (let k = start; k < end; k++) h = Math.imul(h ^ b[k]!, 0x01000193);
    const slot = (h ^ (h >>> 16)) & (KEY_SLOTS - 1);
    const key = this.keys[slot];
    if (key !== undefined && sameBytes(key, b, start, end)) return this.hints[slot]!;
    const hints = contextOf(keyText(b, start, end));
    this.keys[slot] = Buffer.from(b.subarray(start, end));
    this.hints[slot] = hints;
    return hints;
  }
}

/** short keys: a loop costs less than Buffer#compare's call into native code */
function sameBytes(key: Buffer, b: Buffer, start: number, end: number): boolean {
  if (key.length !== end - start) return false;
  for (let k = 0; k < key.length; k++) if (key[k] !== b[start + k]) return false;
  return true;
}

/**
 * Whether a key's raw bytes can be a person-name field name (contextOf's CTX_PERSON_NAME: fullName,
 * surname, cardholder, prénom, …): they hold `nam`, `nom` or `hold` in any case. An escaped key
 * is looked up (it may spell them in escapes).
 */
function mayNameAPerson(b: Buffer, from: number, to: number): boolean {
  for (let k = from; k < to - 2; k++) {
    const c = b[k]! | 0x20;
    if (b[k] === 0x5c) return true;
    if (c !== 0x6e && c !== 0x68) continue;
    const c1 = b[k + 1]! | 0x20;
    const c2 = b[k + 2]! | 0x20;
    if (c === 0x6e && ((c1 === 0x61 && c2 === 0x6d) || (c1 === 0x6f && c2 === 0x6d))) return true; // nam, nom
    if (c === 0x68 && c1 === 0x6f && c2 === 0x6c) return true; // hol(d)
  }
  for (let k = Math.max(from, to - 2); k < to; k++) if (b[k] === 0x5c) return true;
  return false;
}

/**
 * Whether a key's raw bytes can be an address field name (CTX_ADDRESS: address, addr, street,
 * strasse, adresse, anschrift, rue, calle, dirección, indirizzo, residence, domicile): they hold
 * one of those words' first letters in any case. An escaped key is looked up.
 */
const ADDRESS_STEMS = ['addr', 'adre', 'ansc', 'dire', 'indi', 'stre', 'stra', 'rue', 'call', 'resi', 'domi'];
/** the stems by their first letter's code (lower case): most bytes start none */
const STEMS_BY_FIRST: (number[][] | undefined)[] = [];
for (const stem of ADDRESS_STEMS) (STEMS_BY_FIRST[stem.charCodeAt(0)] ??= []).push([...stem].map((c) => c.charCodeAt(0)));
function mayNameAnAddress(b: Buffer, from: number, to: number): boolean {
  for (let k = from; k < to; k++) {
    const c = b[k]!;
    if (c === 0x5c) return true;
    const stems = STEMS_BY_FIRST[c | 0x20];
    if (stems === undefined) continue;
    for (const stem of stems) {
      if (k + stem.length > to) continue;
      let j = 1;
      while (j < stem.length && (b[k + j]! | 0x20) === stem[j]) j++;
      if (j === stem.length) return true;
    }
  }
  return false;
}

function allDigits(b: Buffer, from: number, to: number): boolean {
  for (let k = from; k < to; k++) if (!isDigit(b[k])) return false;
  return true;
}

function isDigit(c: number | undefined): boolean {
  return c !== undefined && c >= 0x30 && c <= 0x39;
}
