import { foldKey } from '../json-bytes/paths.ts';
import { EV_RAW, EV_STRING, keyText, leafText, type PlaceStep, type ScanPlace, type UnmappedVisitor } from '../json-bytes/scan.ts';
import { fieldHints, unmappedKeyKind, unmappedValueKind, worthChecking, type GuardKind } from './guard.ts';
import { pathSegment } from './profile.ts';

/** Personal data where no mapping looks: the path (keys that are data shown as `*`) and kind — never the value. */
export interface UnmappedFinding {
  path: string;
  kind: GuardKind;
  /** the value's raw span (a string with its quotes, a number's digits), for a caller that protects it */
  start: number;
  end: number;
  /** the finding is an object key, not a value: it cannot be protected in place */
  key: boolean;
}

/** An allow-list entry: `notes` or `items[].sku` as steps (a key, or null for `[]`); it covers everything under it. */
export type AllowedPath = readonly PlaceStep[];

/** `items[].sku` → ['items', null, 'sku'] */
export function allowedPath(path: string): AllowedPath {
  return path.split('.').flatMap((part): PlaceStep[] => (part.endsWith('[]') ? [part.slice(0, -2), null] : [part]));
}

/** How many findings one document reports at most: the first names the dead letter, the rest only count. */
const MAX_FINDINGS = 16;

/**
 * The unmapped guard over a JSON document, as the scanner's visitor (scanJson): every string and
 * number no mapping names, and every object key, is checked by the guard's detectors unless an
 * allowed path covers it. Reused document after document (begin() clears it); findings are kept
 * in document order.
 */
export class JsonGuard implements UnmappedVisitor {
  readonly findings: UnmappedFinding[] = [];
  private readonly allow: readonly AllowedPath[];
  private readonly fold: boolean;

  /** `fold`: allowed paths match keys case-insensitively, as the mapping's paths do (keys: insensitive) */
  constructor(allow: readonly AllowedPath[], fold: boolean) {
    this.fold = fold;
    this.allow = fold ? allow.map((p) => p.map((s) => (s === null ? null : foldKey(s)))) : allow;
  }

  begin(): void {
    this.findings.length = 0;
  }

  value(b: Buffer, kind: number, start: number, end: number, place: ScanPlace): void {
    if (this.findings.length >= MAX_FINDINGS) return;
    if (kind === EV_RAW && !isDigit(b[start])) return;
    const from = kind === EV_STRING ? start + 1 : start;
    const to = kind === EV_STRING ? end - 1 : end;
    let digits = 0;
    let at = false;
    for (let k = from; k < to; k++) {
      const c = b[k]!;
      if (c >= 0x30 && c <= 0x39) digits++;
      else if (c === 0x40) at = true;
      else if (kind === EV_RAW) return; // a fraction or an exponent: not an identifier
    }
    const name = this.fieldName(b, place);
    if (!worthChecking(to - from, digits, at, fieldHints(name))) return;
    const found = unmappedValueKind(leafText(b, kind, start, end), name);
    if (found !== undefined) this.report(place.steps(), found, start, end, false);
  }

  key(b: Buffer, start: number, end: number, place: ScanPlace): void {
    if (this.findings.length >= MAX_FINDINGS) return;
    let digits = 0;
    let at = false;
    for (let k = start + 1; k < end - 1; k++) {
      const c = b[k]!;
      if (c >= 0x30 && c <= 0x39) digits++;
      else if (c === 0x40) at = true;
    }
    if (!worthChecking(end - start - 2, digits, at, 0)) return;
    const found = unmappedKeyKind(keyText(b, start, end));
    if (found !== undefined) this.report(place.steps(), found, start, end, true);
  }

  private fieldName(b: Buffer, place: ScanPlace): string {
    const start = place.keyStart();
    return start < 0 ? '' : keyText(b, start, place.keyEnd());
  }

  private report(steps: PlaceStep[], kind: GuardKind, start: number, end: number, key: boolean): void {
    if (this.allowed(steps)) return;
    this.findings.push({ path: formatPath(steps, key), kind, start, end, key });
  }

  private allowed(steps: readonly PlaceStep[]): boolean {
    return this.allow.some((entry) => entry.length <= steps.length && entry.every((s, i) => {
      const step = steps[i]!;
      if (s === null || step === null) return s === step;
      return s === (this.fold ? foldKey(step) : step);
    }));
  }
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

function isDigit(c: number | undefined): boolean {
  return c !== undefined && c >= 0x30 && c <= 0x39;
}
