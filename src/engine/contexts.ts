import { fieldPatternMatches } from './config/compile.ts';
import { ROLE, SUBJECT, type CompiledConfig, type CompiledProcessingContext, type CompiledRightsContext } from './config/compiled.ts';
import type { ErrorDetail } from './errors.ts';
import { isSubjectId, SUBJECT_ID_RULE } from './key-access/subject-keyring.ts';
import type { Identity } from './identity.ts';
import type { TransformRequest } from './request/schema.ts';

export interface ResolvedRights {
  names: readonly string[];
  grants(action: string, className: string, propertyName: string): boolean;
}

export interface ResolvedContexts {
  /** keyed by the body's guid, lowercased (guids compare case-insensitively) */
  rights: Map<string, ResolvedRights>;
  processing: Map<string, CompiledProcessingContext>;
  /** the data subject a processing context names (its Subject evidence), by the body's guid lowercased */
  subjects: Map<string, string>;
  badRequest: ErrorDetail[];
  forbidden: ErrorDetail[];
}

type Evidence = { name: string; value: string };

/**
 * Where a context's evidences sit, for pointers and messages: `/rightsContexts/0` of a transform
 * request body (evidences at `/rightsContexts/0/evidences`), or `/rightsEvidences` of a binding.
 */
export interface ContextSite {
  /** names the context in messages */
  label: string;
  /** JSON pointer of its evidences array */
  evidences: string;
}

/**
 * Matches the body's contexts against the configuration. A configured context matches when every
 * one of its evidences appears in the body's context; a Role evidence counts only if the caller
 * holds the role. Rights: all matching configured contexts apply (their grants add up).
 * Processing: the matching context with the most evidences wins; a tie is ambiguous.
 * Evidence names no configured context uses are refused, so a typo cannot silently select less.
 * Only contexts that some request refers to are resolved.
 */
export function resolveContexts(config: CompiledConfig, body: TransformRequest, identity: Identity): ResolvedContexts {
  const out: ResolvedContexts = { rights: new Map(), processing: new Map(), subjects: new Map(), badRequest: [], forbidden: [] };
  const usedRights = new Set(body.requests.map((r) => r.rightsContext.toLowerCase()));
  const usedProcessing = new Set(body.requests.map((r) => r.processingContext.toLowerCase()));
  const held = new Set(identity.roles);
  const site = (kind: string, i: number): ContextSite => ({ label: `/${kind}/${i}`, evidences: `/${kind}/${i}/evidences` });

  body.processingContexts.forEach((ctx, i) => {
    if (!usedProcessing.has(ctx.guid.toLowerCase())) return;
    const matched = matchProcessing(config, ctx.evidences, site('processingContexts', i));
    out.badRequest.push(...matched.badRequest);
    if (matched.context) out.processing.set(ctx.guid.toLowerCase(), matched.context);
    if (matched.subject !== undefined) out.subjects.set(ctx.guid.toLowerCase(), matched.subject);
  });

  body.rightsContexts.forEach((ctx, i) => {
    if (!usedRights.has(ctx.guid.toLowerCase())) return;
    const matched = matchRights(config, ctx.evidences, held, site('rightsContexts', i));
    out.badRequest.push(...matched.badRequest);
    out.forbidden.push(...matched.forbidden);
    if (matched.rights) out.rights.set(ctx.guid.toLowerCase(), matched.rights);
  });
  return out;
}

/**
 * The configured processing context that one context's evidences select, or why none, and the data
 * subject it names: a Subject evidence (at most one) is not matched against configured contexts —
 * it says whose values the requests carry (subject-scoped keys, docs/erasure.md).
 */
export function matchProcessing(
  config: CompiledConfig,
  evidences: readonly Evidence[],
  site: ContextSite,
): { context?: CompiledProcessingContext; subject?: string; badRequest: ErrorDetail[] } {
  const badRequest: ErrorDetail[] = [];
  const subject = subjectOf(evidences, site, badRequest);
  // no configured context has a Subject evidence (the compiler refuses one), so it matches none
  if (unknownNames(evidences, config.processingEvidenceNames, site, badRequest, SUBJECT) || badRequest.length) return { badRequest };
  const matches = config.processingContexts.filter((c) => matchesAll(c.evidences, evidences, () => true));
  const best = Math.max(0, ...matches.map((c) => c.evidences.length));
  const top = matches.filter((c) => c.evidences.length === best);
  if (top.length === 0) {
    badRequest.push({ code: 'PROCESSING_CONTEXT_UNMATCHED', pointer: site.evidences, message: `${site.label} matches no configured processing context` });
  } else if (top.length > 1) {
    badRequest.push({
      code: 'PROCESSING_CONTEXT_AMBIGUOUS',
      pointer: site.evidences,
      message: `${site.label} matches processing contexts ${top.map((c) => c.name).join(', ')} equally well`,
    });
  } else {
    return { context: top[0]!, ...(subject !== undefined ? { subject } : {}), badRequest };
  }
  return { badRequest };
}

/** The one Subject evidence's value, checked (never echoed: a subject id is personal data). */
function subjectOf(evidences: readonly Evidence[], site: ContextSite, problems: ErrorDetail[]): string | undefined {
  let subject: string | undefined;
  evidences.forEach((e, j) => {
    if (e.name !== SUBJECT) return;
    const pointer = `${site.evidences}/${j}/value`;
    if (subject !== undefined) problems.push({ code: 'SUBJECT_ID_INVALID', pointer, message: `${site.evidences}/${j}: a context names one Subject at most` });
    else if (!isSubjectId(e.value)) problems.push({ code: 'SUBJECT_ID_INVALID', pointer, message: `${site.evidences}/${j}: a Subject has ${SUBJECT_ID_RULE}` });
    else subject = e.value;
  });
  return problems.length ? undefined : subject;
}

/** The configured rights contexts that one context's evidences match for a caller holding `held`, or why none. */
export function matchRights(
  config: CompiledConfig,
  evidences: readonly Evidence[],
  held: ReadonlySet<string>,
  site: ContextSite,
): { rights?: ResolvedRights; badRequest: ErrorDetail[]; forbidden: ErrorDetail[] } {
  const badRequest: ErrorDetail[] = [];
  const forbidden: ErrorDetail[] = [];
  if (unknownNames(evidences, config.rightsEvidenceNames, site, badRequest)) return { badRequest, forbidden };
  evidences.forEach((e, j) => {
    if (e.name === ROLE && !held.has(e.value)) {
      forbidden.push({
        code: 'ROLE_NOT_HELD',
        pointer: `${site.evidences}/${j}/value`,
        message: `${site.evidences}/${j} names a role the caller does not hold`,
      });
    }
  });
  if (forbidden.length) return { badRequest, forbidden };
  const matched = config.rightsContexts.filter((c) => matchesAll(c.evidences, evidences, (e) => e.name !== ROLE || held.has(e.value)));
  if (matched.length === 0) {
    forbidden.push({ code: 'RIGHTS_CONTEXT_UNMATCHED', pointer: site.evidences, message: `${site.label} matches no configured rights context` });
    return { badRequest, forbidden };
  }
  return { rights: { names: matched.map((c) => c.name), grants: (action, cls, prop) => granted(matched, action, cls, prop) }, badRequest, forbidden };
}

function unknownNames(evidences: readonly Evidence[], known: ReadonlySet<string>, site: ContextSite, problems: ErrorDetail[], reserved?: string): boolean {
  let found = false;
  evidences.forEach((e, j) => {
    if (!known.has(e.name) && e.name !== reserved) {
      found = true;
      problems.push({
        code: 'EVIDENCE_UNKNOWN',
        pointer: `${site.evidences}/${j}/name`,
        message: `${site.evidences}/${j}: evidence name "${truncate(e.name)}" is not used by any configured context`,
      });
    }
  });
  return found;
}

function matchesAll(configured: readonly (readonly [string, string])[], given: readonly Evidence[], counts: (e: Evidence) => boolean): boolean {
  return configured.every(([n, v]) => given.some((e) => e.name === n && e.value === v && counts(e)));
}

function granted(contexts: readonly CompiledRightsContext[], action: string, cls: string, prop: string): boolean {
  return contexts.some((c) => c.grants.some((g) => g.actions.has(action) && g.fields.some((f) => fieldPatternMatches(f, cls, prop))));
}

/** Evidence names are caller-chosen labels, not protected values, but keep messages bounded. */
function truncate(s: string): string {
  return s.length > 64 ? `${s.slice(0, 64)}…` : s;
}
