import { detect, KINDS } from '../discover/detectors.ts';
import type { GuardKind } from '../discover/guard.ts';
import { JsonGuard, type UnmappedFinding } from '../discover/json-guard.ts';
import { VeilError, type ErrorDetail, type FieldRef } from '../engine/index.ts';
import { EV_STRING, hasBackslash, keyText, leafText, type ScanPlace, type UnmappedVisitor } from '../json-bytes/scan.ts';
import { unmappedPolicyConfig, type GatewayUnmapped } from './gateway-config.ts';
import { parseSelector } from './selector.ts';

/**
 * The unmapped guard at the gateway door: every string, number and object key of a request body
 * that no request selector reaches is checked by veil's detectors (src/discover/guard.ts, the
 * stream's guard), and personal data found there is refused (422 UNMAPPED_PERSONAL_DATA) or,
 * for the kinds the route protects, protected like a selected value. The path and kind are
 * reported, never the value.
 */
export interface RequestGuard {
  action: 'refuse' | 'protect';
  /** action protect: the field each protected kind is protected as (a kind not here is refused) */
  protect: ReadonlyMap<GuardKind, FieldRef>;
  /** the detectors with the route's allow-list; reused body after body (scans are synchronous) */
  detector: JsonGuard;
}

/** The route's guard, or undefined for `unmapped: pass`. `foldKeys`: allow entries match keys as the selectors do. */
export function compileGuard(unmapped: GatewayUnmapped, foldKeys: boolean): RequestGuard | undefined {
  const policy = unmappedPolicyConfig(unmapped);
  if (policy.action === 'pass') return undefined;
  const allow = policy.allow.map((text) => parseSelector(text).steps.map((s) => (s.kind === 'key' ? s.name : null)));
  const protect = new Map<GuardKind, FieldRef>();
  if (policy.action === 'protect') {
    for (const [kind, ref] of Object.entries(policy.protect) as [GuardKind, string][]) {
      const [className, propertyName] = ref.split('.') as [string, string];
      protect.set(kind, { className, propertyName });
    }
  }
  return { action: policy.action, protect, detector: new JsonGuard(allow, foldKeys) };
}

/** How many findings a refusal names: the first few tell the caller what to fix. */
export const MAX_REPORTED = 16;

/**
 * The scanner's visitor for one body: the route's detectors, with every finding kept (the
 * detectors alone stop at 16, which a body whose findings are protected must not) up to `cap`,
 * and escaped strings seen as the application will read them (the detectors' prefilters read raw
 * bytes, where `\u0040` is no `@`). Create it right before the scan: the detector is shared.
 */
export class BodyGuard implements UnmappedVisitor {
  readonly found: UnmappedFinding[] = [];
  /** more findings than `cap`: some were not looked at */
  truncated = false;
  private readonly detector: JsonGuard;
  private readonly cap: number;

  constructor(guard: RequestGuard, cap: number) {
    this.detector = guard.detector;
    this.cap = cap;
    this.detector.begin();
  }

  value(b: Buffer, kind: number, start: number, end: number, place: ScanPlace): void {
    if (this.full()) return;
    if (kind !== EV_STRING || !hasBackslash(b, start + 1, end - 1)) {
      this.detector.value(b, kind, start, end, place);
      this.take();
      return;
    }
    const value = unescaped(leafText(b, kind, start, end));
    const keyStart = place.keyStart();
    if (keyStart < 0) this.detector.value(value, EV_STRING, 0, value.length, place);
    else {
      // the field's name is read from the key's span: the key goes first in the buffer the detector sees
      const key = b.subarray(keyStart, place.keyEnd());
      const both = Buffer.concat([key, value]);
      this.detector.value(both, EV_STRING, key.length, both.length, { steps: () => place.steps(), keyStart: () => 0, keyEnd: () => key.length });
    }
    this.take(start, end);
  }

  key(b: Buffer, start: number, end: number, place: ScanPlace): void {
    if (this.full()) return;
    if (!hasBackslash(b, start + 1, end - 1)) {
      this.detector.key(b, start, end, place);
      this.take();
      return;
    }
    const key = unescaped(keyText(b, start, end));
    this.detector.key(key, 0, key.length, place);
    this.take(start, end);
  }

  private full(): boolean {
    if (this.found.length < this.cap) return false;
    this.truncated = true;
    return true;
  }

  /** moves the detector's finding, if any, here: at the span given (an escaped string's own), else its own */
  private take(start = -1, end = -1): void {
    const findings = this.detector.findings;
    if (findings.length === 0) return;
    for (const f of findings) this.found.push(start < 0 ? f : { ...f, start, end });
    this.detector.begin();
  }
}

/** a decoded string as JSON without escapes where JSON allows (quotes, backslashes and controls stay escaped) */
function unescaped(text: string): Buffer {
  return Buffer.from(JSON.stringify(text), 'utf8');
}

/** One finding as the caller and the operator see it: where, and what kind — never the value. */
export interface UnmappedPlace {
  /** in selector syntax (`profile.contacts[*].email`), ready for `select:` or `allow:`; a key that may be data shows as `*` */
  path: string;
  kind: GuardKind;
  /** JSON pointer of the value (`/profile/contacts/0/email`), or of the nearest object above it whose keys can be shown */
  pointer: string;
  /** the personal data is an object key (`{"byEmail": {"ann@example.com": …}}`): refused, a key cannot be protected in place */
  key: boolean;
}

/** The refusal: 422 UNMAPPED_PERSONAL_DATA, each finding a detail with its pointer; the problem+json carries `unmapped` too. */
export class UnmappedRefusal extends VeilError {
  readonly findings: readonly UnmappedPlace[];
  constructor(findings: readonly UnmappedPlace[], more: boolean) {
    const details: ErrorDetail[] = findings.map((f) => ({ code: 'UNMAPPED_PERSONAL_DATA', pointer: f.pointer, message: describe(f) }));
    const first = describe(findings[0]!);
    const message = findings.length === 1 && !more
      ? `${first}, which the route's request selectors do not name: nothing was forwarded`
      : `${findings.length}${more ? ' or more' : ''} unmapped paths hold personal data; the first: ${first}. Nothing was forwarded`;
    super('UNMAPPED_PERSONAL_DATA', message, details);
    this.findings = findings;
  }
}

function describe(f: UnmappedPlace): string {
  const where = f.path === '' ? 'the body itself' : `unmapped path ${f.path}`;
  return `${where} holds personal data (${f.kind})${f.key ? ' as an object key' : ''}`;
}

/** The refusal of a body's findings (the first MAX_REPORTED), their places found in `body`. */
export function unmappedRefusal(body: Buffer, findings: readonly UnmappedFinding[], more: boolean): UnmappedRefusal {
  const shown = findings.slice(0, MAX_REPORTED);
  const places = placesOf(body, shown.map((f) => f.start));
  return new UnmappedRefusal(shown.map((f, i) => ({ ...placeText(places[i]!, f.key), kind: f.kind, key: f.key })), more || findings.length > shown.length);
}

/** Where one finding is, as the caller and the operator see it. */
export function findingPlace(body: Buffer, f: UnmappedFinding): UnmappedPlace {
  return { ...placeText(placesOf(body, [f.start])[0]!, f.key), kind: f.kind, key: f.key };
}

/** A step to a value: an object key (decoded) or an array index. */
export type Step = string | number;

/**
 * Where each offset of `targets` (the start of a value or of a key, in a valid JSON text) stands:
 * the keys and indexes from the root to the value, or to the object holding the key. Walks the
 * body once; used only to tell a refused caller where (the scan keeps no indexes).
 */
export function placesOf(b: Buffer, targets: readonly number[]): Step[][] {
  const order = targets.map((t, i) => [t, i] as const).sort((x, y) => x[0] - y[0]);
  const out: Step[][] = targets.map(() => []);
  const stack: { array: boolean; index: number; key: string }[] = [];
  const here = (depth: number): Step[] => stack.slice(0, depth).map((f) => (f.array ? f.index : f.key));
  let t = 0;
  let p = 0;
  let state: 'value' | 'key' | 'after' = 'value';
  while (t < order.length) {
    p = skipWs(b, p);
    if (p >= b.length) break;
    if (state === 'after') {
      if (stack.length === 0) break;
      const top = stack.at(-1)!;
      if (b[p++] === 0x2c) {
        if (top.array) top.index++;
        state = top.array ? 'value' : 'key';
      } else stack.pop();
      continue;
    }
    while (t < order.length && order[t]![0] < p) t++;
    const hit = t < order.length && order[t]![0] === p;
    if (state === 'key') {
      // a key's place is the object holding it
      if (hit) out[order[t++]![1]] = here(stack.length - 1);
      const end = stringEnd(b, p);
      stack.at(-1)!.key = keyText(b, p, end);
      p = skipWs(b, end) + 1;
      state = 'value';
      continue;
    }
    if (hit) out[order[t++]![1]] = here(stack.length);
    const c = b[p]!;
    if (c === 0x7b || c === 0x5b) {
      stack.push({ array: c === 0x5b, index: 0, key: '' });
      p = skipWs(b, p + 1);
      if (b[p] === c + 2) {
        stack.pop();
        p++;
        state = 'after';
      } else state = c === 0x7b ? 'key' : 'value';
      continue;
    }
    if (c === 0x22) p = stringEnd(b, p);
    else while (p < b.length && !isDelimiter(b[p]!)) p++;
    state = 'after';
  }
  return out;
}

/** a key shown in a path or pointer: a field name (also with - and $), not one a detector takes for data */
const SHOWN_KEY = /^[A-Za-z_$][A-Za-z0-9_$-]{0,63}$/;
const NO_CONTEXT = { name: '', personalNeighbours: false, parent: '' };

function shownKey(key: string): boolean {
  return SHOWN_KEY.test(key) && !KINDS.some((kind) => detect(kind, key, NO_CONTEXT));
}

/** The selector-syntax path and the JSON pointer of a place; `key`: the place is an object whose key is the finding. */
export function placeText(steps: readonly Step[], key: boolean): { path: string; pointer: string } {
  let path = '';
  let pointer = '';
  let pointing = true;
  for (const step of steps) {
    if (typeof step === 'number') {
      path += '[*]';
      if (pointing) pointer += `/${step}`;
      continue;
    }
    const shown = shownKey(step);
    const segment = !shown ? '*' : /^[A-Za-z0-9_$]+$/.test(step) ? step : `"${step}"`;
    path += path === '' ? segment : `.${segment}`;
    if (!shown) pointing = false;
    else if (pointing) pointer += `/${step.replaceAll('~', '~0').replaceAll('/', '~1')}`;
  }
  if (key) path += path === '' ? '*' : '.*';
  return { path, pointer };
}

function skipWs(b: Buffer, p: number): number {
  while (p < b.length && (b[p] === 0x20 || b[p] === 0x0a || b[p] === 0x0d || b[p] === 0x09)) p++;
  return p;
}

/** the position after the string whose opening quote is at p */
function stringEnd(b: Buffer, p: number): number {
  for (let q = p + 1; q < b.length; q++) {
    if (b[q] === 0x5c) q++;
    else if (b[q] === 0x22) return q + 1;
  }
  return b.length;
}

function isDelimiter(c: number): boolean {
  return c === 0x2c || c === 0x5d || c === 0x7d || c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}
