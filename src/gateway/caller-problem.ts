import { combine, VeilError, type ErrorDetail } from '../engine/index.ts';
import { ERROR_CATALOG } from '../errors/catalog.ts';
import type { Located } from './json-fields.ts';
import type { Route } from './routes.ts';
import { pointersOf } from './selector.ts';

export interface ProtectCall {
  route: Route;
  /** the caller's body, decoded */
  body: Buffer;
  located: Located;
  /** the action the gateway asked for (gateway.actions.protect) */
  action: string;
  /** whose roles the protection ran with: the caller's token, or gateway.protectAs */
  rolesFrom: 'token' | 'protectAs';
  /**
   * values the unmapped guard protected, sent after the selected ones (instance
   * located.values.length + i): the pointer of the i-th
   */
  guardPointer?: (i: number) => string;
}

/**
 * The engine's refusal of the gateway's protect call, told in terms of the caller's request. The
 * engine describes the transform request the gateway built — `/requests/0/instances/3`, rights
 * context `/rightsContexts/0` or its guid — which the caller never sent. Each detail's pointer
 * becomes the value's place in the caller's body (`/card/number`), or "" (the request as a whole:
 * its token's roles) for refusals of the roles; messages that would name the gateway's own call
 * are rewritten, and the summary is rebuilt from the details. Failures of the service (5xx) keep
 * their message: it names nothing of the call.
 */
export function callerProblem(error: VeilError, call: ProtectCall): VeilError {
  if (error.status >= 500 || error.details.length === 0) return error;
  const roles = call.rolesFrom === 'token' ? "the roles in the caller's token" : "the gateway's protectAs roles";
  let pointers: string[][] | undefined;
  const pointerOf = (instance: number): string => {
    const v = call.located.values[instance];
    if (!v) return call.guardPointer !== undefined && instance >= call.located.values.length ? call.guardPointer(instance - call.located.values.length) : '';
    if (pointers === undefined) {
      const doc: unknown = JSON.parse(call.body.toString('utf8'));
      pointers = call.route.request.selectors.map((s) => pointersOf(doc, s, call.route.request.foldKeys));
    }
    // duplicate keys make the parsed document differ from the scanned bytes: then the place is unknown
    const list = pointers[v.selector];
    const counted = call.located.values.filter((w) => w.selector === v.selector).length;
    return list && list.length === counted ? (list[v.occurrence] ?? '') : '';
  };
  const details = error.details.map((d): ErrorDetail => {
    const { code, className, propertyName, instance } = d;
    const pointer = instance === undefined ? '' : pointerOf(instance);
    const field = className ? `${className}.${propertyName}` : undefined;
    return { code, message: messageFor(d, { roles, action: call.action, field, pointer }), pointer, ...(className ? { className, propertyName } : {}) };
  });
  // the caller's problem keeps the code, status and retriable of what the engine refused
  return new VeilError(error.code, combine(details, ERROR_CATALOG).message, details, { cause: error }, error);
}

function messageFor(d: ErrorDetail, at: { roles: string; action: string; field?: string; pointer: string }): string {
  const where = at.pointer ? ` (at ${at.pointer})` : '';
  switch (d.code) {
    case 'ACTION_NOT_GRANTED':
      return `${at.action} on ${at.field ?? 'this field'}${where} is not granted to ${at.roles}`;
    case 'RIGHTS_CONTEXT_UNMATCHED':
    case 'ROLE_NOT_HELD':
    case 'EVIDENCE_UNKNOWN':
      return `${at.roles} match no configured rights context, so nothing can be protected`;
    case 'PROCESSING_CONTEXT_UNMATCHED':
    case 'PROCESSING_CONTEXT_AMBIGUOUS':
      return `the gateway's action ${at.action} selects no single processing context (a configuration error)`;
    default:
      // value errors name the field and what is wrong with the value, never the gateway's call;
      // anything that would is replaced by the catalog's title
      return INTERNAL_REFERENCE.test(d.message)
        ? `${(ERROR_CATALOG as Readonly<Record<string, { title: string }>>)[d.code]?.title ?? 'refused'}${at.field ? `: ${at.field}${where}` : ''}`
        : `${d.message}${where}`;
  }
}

/** what names the gateway's own transform request: its pointers, and its fixed guids */
const INTERNAL_REFERENCE = /\/(rightsContexts|processingContexts|requests)\/\d|00000000-0000-4000-800[0-2]-/;
