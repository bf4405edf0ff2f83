import { fieldPatternMatches } from './config/compile.ts';
import { ROLE, type CompiledConfig, type CompiledProcessingContext, type CompiledRightsContext } from './config/compiled.ts';
import type { ErrorDetail } from './errors.ts';
import type { Identity } from './engine.ts';
import type { TransformRequest } from './request/schema.ts';

export interface ResolvedRights {
  names: readonly string[];
  grants(action: string, className: string, propertyName: string): boolean;
}

export interface ResolvedContexts {
  /** keyed by the body's guid, lowercased (guids compare case-insensitively) */
  rights: Map<string, ResolvedRights>;
  processing: Map<string, CompiledProcessingContext>;
  badRequest: ErrorDetail[];
  forbidden: ErrorDetail[];
}

type Evidence = { name: string; value: string };

/**
 * Matches the body's contexts against the configuration. A configured context matches when every
 * one of its evidences appears in the body's context; a Role evidence counts only if the caller
 * holds the role. Rights: all matching configured contexts apply (their grants add up).
 * Processing: the matching context with the most evidences wins; a tie is ambiguous.
 * Evidence names no configured context uses are refused, so a typo cannot silently select less.
 * Only contexts that some request refers to are resolved.
 */
export function resolveContexts(config: CompiledConfig, body: TransformRequest, identity: Identity): ResolvedContexts {
  const out: ResolvedContexts = { rights: new Map(), processing: new Map(), badRequest: [], forbidden: [] };
  const usedRights = new Set(body.requests.map((r) => r.rightsContext.toLowerCase()));
  const usedProcessing = new Set(body.requests.map((r) => r.processingContext.toLowerCase()));
  const held = new Set(identity.roles);

  body.processingContexts.forEach((ctx, i) => {
    if (!usedProcessing.has(ctx.guid.toLowerCase())) return;
    const at = `/processingContexts/${i}`;
    if (unknownNames(ctx.evidences, config.processingEvidenceNames, at, out.badRequest)) return;
    const matches = config.processingContexts.filter((c) => matchesAll(c.evidences, ctx.evidences, () => true));
    const best = Math.max(0, ...matches.map((c) => c.evidences.length));
    const top = matches.filter((c) => c.evidences.length === best);
    if (top.length === 0) {
      out.badRequest.push({ code: 'PROCESSING_CONTEXT_UNMATCHED', pointer: `${at}/evidences`, message: `${at} matches no configured processing context` });
    } else if (top.length > 1) {
      out.badRequest.push({ code: 'PROCESSING_CONTEXT_AMBIGUOUS', pointer: `${at}/evidences`, message: `${at} matches processing contexts ${top.map((c) => c.name).join(', ')} equally well` });
    } else {
      out.processing.set(ctx.guid.toLowerCase(), top[0]!);
    }
  });

  body.rightsContexts.forEach((ctx, i) => {
    if (!usedRights.has(ctx.guid.toLowerCase())) return;
    const at = `/rightsContexts/${i}`;
    if (unknownNames(ctx.evidences, config.rightsEvidenceNames, at, out.badRequest)) return;
    let roleProblem = false;
    ctx.evidences.forEach((e, j) => {
      if (e.name === ROLE && !held.has(e.value)) {
        roleProblem = true;
        out.forbidden.push({ code: 'ROLE_NOT_HELD', pointer: `${at}/evidences/${j}/value`, message: `${at}/evidences/${j} names a role the caller does not hold` });
      }
    });
    if (roleProblem) return;
    const matched = config.rightsContexts.filter((c) => matchesAll(c.evidences, ctx.evidences, (e) => e.name !== ROLE || held.has(e.value)));
    if (matched.length === 0) {
      out.forbidden.push({ code: 'RIGHTS_CONTEXT_UNMATCHED', pointer: `${at}/evidences`, message: `${at} matches no configured rights context` });
      return;
    }
    out.rights.set(ctx.guid.toLowerCase(), { names: matched.map((c) => c.name), grants: (action, cls, prop) => granted(matched, action, cls, prop) });
  });
  return out;
}

function unknownNames(evidences: readonly Evidence[], known: ReadonlySet<string>, at: string, problems: ErrorDetail[]): boolean {
  let found = false;
  evidences.forEach((e, j) => {
    if (!known.has(e.name)) {
      found = true;
      problems.push({ code: 'EVIDENCE_UNKNOWN', pointer: `${at}/evidences/${j}/name`, message: `${at}/evidences/${j}: evidence name "${truncate(e.name)}" is not used by any configured context` });
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
