import { isDataKey } from '../discover/index.ts';
import { JsonGuard, likelihoodLevel, type AllowedPath, type GuardKind, type UnmappedFinding } from '../drift-guard/index.ts';
import { type ErrorDetail, type FieldRef } from '../engine/index.ts';
import { unmappedPolicyConfig, type GatewayUnmapped } from './gateway-config.ts';
import { parseSelector } from './selector.ts';
import { DoorError } from '../errors/door-errors.ts';

/**
 * The unmapped guard at the gateway door: every string, number and object key of a request body
 * that no request selector reaches is checked by veil's detectors (src/drift-guard, the
 * stream's guard), and personal data found there is refused (422 UNMAPPED_PERSONAL_DATA) or,
 * for the kinds the route protects, protected like a selected value. The path and kind are
 * reported, never the value.
 */
export interface RequestGuard {
  action: 'refuse' | 'protect';
  /** action protect: the field each protected kind is protected as (a kind not here is refused) */
  protect: ReadonlyMap<GuardKind, FieldRef>;
  /** the route's allow-list, matched with its key rule */
  allow: readonly AllowedPath[];
  foldKeys: boolean;
  /** the likelihood (1–5) a finding needs */
  threshold: number;
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
  return { action: policy.action, protect, allow, foldKeys, threshold: likelihoodLevel(policy.threshold) };
}

/** How many findings a refusal names: the first few tell the caller what to fix. */
export const MAX_REPORTED = 16;

/**
 * The guard's detectors for one body (the stream's JsonGuard, which reads escaped text as the
 * application will): every finding kept up to `cap` — all that a body whose findings are
 * protected holds, or the first few of a body that is refused — and `truncated` past it.
 */
export class BodyGuard extends JsonGuard {
  constructor(guard: RequestGuard, cap: number) {
    super(guard.allow, guard.foldKeys, cap, guard.threshold);
  }

  get found(): readonly UnmappedFinding[] {
    return this.findings;
  }
}

const shared = new WeakMap<RequestGuard, Map<number, BodyGuard>>();

/**
 * The route's detectors for the next body, cleared: one per route and cap, reused body after body
 * (a body's scan and the reading of its findings are synchronous, and each finding is an object
 * of its own), so that a request allocates no detector, key cache or findings list.
 */
export function bodyGuard(guard: RequestGuard, cap: number): BodyGuard {
  let byCap = shared.get(guard);
  if (byCap === undefined) shared.set(guard, (byCap = new Map()));
  let detector = byCap.get(cap);
  if (detector === undefined) byCap.set(cap, (detector = new BodyGuard(guard, cap)));
  detector.begin();
  return detector;
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
export class UnmappedRefusal extends DoorError {
  readonly findings: readonly UnmappedPlace[];
  constructor(findings: readonly UnmappedPlace[], more: boolean) {
    const details: ErrorDetail[] = findings.map((f) => ({ code: 'UNMAPPED_PERSONAL_DATA', pointer: f.pointer, message: describe(f) }));
    const first = describe(findings[0]!);
    const message =
      findings.length === 1 && !more
        ? `${first}, which the route's request selectors do not name: nothing was forwarded`
        : `${findings.length}${more ? ' or more' : ''} unmapped paths hold personal data; the first: ${first}. Nothing was forwarded`;
    super('UNMAPPED_PERSONAL_DATA', message, { details });
    this.findings = findings;
  }
}

function describe(f: UnmappedPlace): string {
  const where = f.path === '' ? 'the body itself' : `unmapped path ${f.path}`;
  return `${where} holds personal data (${f.kind})${f.key ? ' as an object key' : ''}`;
}

/** The refusal of a body's findings (the first MAX_REPORTED). */
export function unmappedRefusal(findings: readonly UnmappedFinding[], more: boolean): UnmappedRefusal {
  const shown = findings.slice(0, MAX_REPORTED);
  return new UnmappedRefusal(
    shown.map((f) => findingPlace(f)),
    more || findings.length > shown.length,
  );
}

/** Where one finding is, as the caller and the operator see it. */
export function findingPlace(f: UnmappedFinding): UnmappedPlace {
  // a key's place is the object holding it
  const steps = f.key ? f.trail.slice(0, -1) : f.trail;
  return { ...placeText(steps, f.key), kind: f.kind, key: f.key };
}

/** A step to a value: an object key (decoded) or an array index. */
export type Step = string | number;

/** a key shown in a path or pointer: a field name (also with - and $), not one a detector takes for data */
const SHOWN_KEY = /^[A-Za-z_$][A-Za-z0-9_$-]{0,63}$/;

function shownKey(key: string): boolean {
  return SHOWN_KEY.test(key) && !isDataKey(key);
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
