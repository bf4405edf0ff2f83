import type { FastifyReply, FastifyRequest } from 'fastify';
import type { fieldCounts } from '../../audit/index.ts';
import type { Plan } from '../../engine/index.ts';
import { ATTR, httpErrorType, OUTCOME_OK, SpanKind, SpanStatusCode, type Span, type Tracing } from '../../observability/index.ts';

export const TRANSFORM_SPAN = 'POST /transform';

/** The span hooks of POST /transform, registered on the route only when tracing is on. */
export interface TransformTrace {
  /** route-level Fastify hooks: the span starts before the body is read and ends once the reply is sent */
  hooks: {
    onRequest(req: FastifyRequest, reply: FastifyReply): Promise<void>;
    onSend(req: FastifyRequest, reply: FastifyReply, payload: unknown): Promise<unknown>;
    onResponse(req: FastifyRequest, reply: FastifyReply): Promise<void>;
  };
  /** a call that was transformed: how many requests, values and fields, which actions */
  transformed(req: FastifyRequest, plan: Plan, counts: ReturnType<typeof fieldCounts>): void;
  /** a call refused by the guarded transform: its error code */
  refused(req: FastifyRequest, code: string): void;
}

/**
 * One SERVER span per POST /transform call, continuing the caller's W3C traceparent when it sends
 * a valid one (else a trace of its own). Attributes: method, scheme, path (the route's own, never
 * the query), route, status, outcome (`ok` or the error code), on a 5xx `error.type` (that code),
 * the active configuration version and counts — never a value, a token or a body.
 */
export function transformTrace(tracing: Tracing, configVersion: () => string | undefined): TransformTrace {
  const spans = new WeakMap<FastifyRequest, Span>();
  /** calls whose outcome the handler named; others are refusals before it (body parsing, size, content type) */
  const named = new WeakSet<FastifyRequest>();
  /** the error code each refused call got, for error.type */
  const codes = new WeakMap<FastifyRequest, string>();
  return {
    hooks: {
      async onRequest(req) {
        const parent = tracing.remote({ traceparent: single(req.headers.traceparent), tracestate: single(req.headers.tracestate) });
        const version = configVersion();
        spans.set(
          req,
          tracing.start(TRANSFORM_SPAN, {
            kind: SpanKind.SERVER,
            parent,
            attributes: {
              [ATTR.httpMethod]: 'POST',
              [ATTR.httpRoute]: '/transform',
              [ATTR.urlScheme]: req.protocol,
              [ATTR.urlPath]: req.url.split('?')[0]!,
              ...(version ? { [ATTR.configVersion]: version } : {}),
            },
          }),
        );
      },
      async onSend(req, reply, payload) {
        // a refusal before the handler: the code of the problem the caller gets (a problem never holds a value)
        if (reply.statusCode >= 400 && !named.has(req)) {
          codes.set(req, problemCode(payload));
          spans.get(req)?.setAttribute(ATTR.outcome, codes.get(req)!);
        }
        return payload;
      },
      async onResponse(req, reply) {
        const span = spans.get(req);
        if (!span) return;
        span.setAttribute(ATTR.httpStatus, reply.statusCode);
        const errorType = httpErrorType(reply.statusCode, codes.get(req));
        if (errorType !== undefined) {
          span.setAttribute(ATTR.errorType, errorType);
          span.setStatus({ code: SpanStatusCode.ERROR });
        }
        span.end();
      },
    },
    transformed(req, plan, counts) {
      named.add(req);
      spans.get(req)?.setAttributes({
        [ATTR.outcome]: OUTCOME_OK,
        [ATTR.requests]: plan.requests.length,
        [ATTR.values]: counts.reduce((n, f) => n + f.count, 0),
        [ATTR.fields]: new Set(counts.map((f) => `${f.className}.${f.propertyName}`)).size,
        [ATTR.actions]: [...new Set(plan.requests.map((r) => r.action))],
      });
    },
    refused(req, code) {
      named.add(req);
      codes.set(req, code);
      spans.get(req)?.setAttribute(ATTR.outcome, code);
    },
  };
}

/** The `code` of a problem+json body as sent, or INTERNAL when there is none to read. */
function problemCode(payload: unknown): string {
  try {
    const code = typeof payload === 'string' ? (JSON.parse(payload) as { code?: unknown }).code : undefined;
    return typeof code === 'string' && /^[A-Z][A-Z0-9_]{0,63}$/.test(code) ? code : 'INTERNAL';
  } catch {
    return 'INTERNAL';
  }
}

/** A header sent once; repeated, it names no single trace context. */
function single(value: string | string[] | undefined): string | undefined {
  return typeof value === 'string' ? value : undefined;
}
