import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { RateLimiter, type BearerVerifier, type Caller } from '../../identity/index.ts';
import { BULK_ERASURE_MAX, SubjectsError, type BulkErasure, type ErasureService, type SubjectAction, type SubjectActor } from '../../subjects/index.ts';
import { RateLimitedError } from '../../identity/errors.ts';

interface Deps {
  verifier: BearerVerifier;
  /** the erasure doors' service (src/subjects/erasure.ts); without it the routes are not there */
  erasures?: ErasureService;
}

// an id (≤ 512 bytes) and a reason (≤ 500 characters) as JSON, escaped: far below this
export const SUBJECT_BODY_LIMIT = 8 * 1024;
// a batch of BULK_ERASURE_MAX such ids (a JSON string of an id escapes to at most 6 bytes a byte: ids are short in practice)
export const SUBJECT_BATCH_BODY_LIMIT = BULK_ERASURE_MAX * 1024 + SUBJECT_BODY_LIMIT;
const FIELDS: Record<SubjectAction, readonly string[]> = { erase: ['subject', 'reason'], status: ['subject'] };
/**
 * Calls per second per client, and the burst above it: erasures arrive person by person (bulk
 * erasure is the command line's), and a status answers whether a person is known — an oracle no
 * client should be able to sweep a list of ids through.
 */
export const SUBJECT_CALLS_PER_SECOND = 10;
export const SUBJECT_CALLS_BURST = 50;

/**
 * The admin API of data subjects (issue 29): POST /admin/subjects/erase {subject, reason} → the
 * signed receipt; POST /admin/subjects/erase-batch {subjects: [...], reason} (issue 43: up to
 * BULK_ERASURE_MAX, one rate token a batch) → a result per subject, in order; POST
 * /admin/subjects/status {subject} → exists / erased / unknown with the reference. The id travels in the body only — URLs end up in access logs. Order: bearer token
 * (401) → the right (403: admin-publisher to erase, any admin role for a status) → the client's
 * rate (429, SUBJECT_CALLS_PER_SECOND) → the body (400)
 * → the store. Every answer is `no-store`; every call, refused ones included, is audited by the
 * service (channel admin) under the subject's reference, never its id. Refusals are thrown to the
 * service's error handler, which answers problem details.
 */
export function registerSubjectRoutes(app: FastifyInstance, deps: Deps): void {
  const erasures = deps.erasures;
  if (!erasures) return;
  const limiter = new RateLimiter({ rate: SUBJECT_CALLS_PER_SECOND, burst: SUBJECT_CALLS_BURST, now: Date.now });
  const door =
    (action: SubjectAction, answer: (body: Record<string, unknown>, actor: SubjectActor) => Promise<unknown>, shape: BodyShape = fieldsShape(FIELDS[action])) =>
    async (req: FastifyRequest, reply: FastifyReply) => {
      reply.header('cache-control', 'no-store');
      const actor: SubjectActor = { by: '', channel: 'admin', requestId: req.id };
      const caller: Caller = await deps.verifier.verifyHeader(req.headers.authorization).catch((e: unknown) => erasures.refuse(action, actor, e));
      const known: SubjectActor = { ...actor, by: caller.subject, caller: { clientId: caller.clientId, subject: caller.subject, issuer: caller.issuer } };
      await erasures.authorize(caller.roles, action, known);
      const wait = limiter.take(caller.clientId);
      if (wait > 0) await erasures.refuse(action, known, new RateLimitedError('too many subject administration calls for this client', Math.ceil(wait)));
      const body = shape.read(req.body);
      if (!body)
        await erasures.refuse(action, known, new SubjectsError('ERASURE_REQUEST_INVALID', `the body must be a JSON object with ${shape.says}, nothing else`));
      return reply.code(200).send(await answer(body!, known));
    };

  app.post(
    '/admin/subjects/erase',
    { bodyLimit: SUBJECT_BODY_LIMIT },
    door('erase', async (body, actor) => {
      const { receipt, claims } = await erasures.erase(body.subject, body.reason, actor);
      return { receipt, claims };
    }),
  );
  app.post(
    '/admin/subjects/erase-batch',
    { bodyLimit: SUBJECT_BATCH_BODY_LIMIT },
    door(
      'erase',
      async (body, actor) => ({
        results: (await erasures.eraseMany(body.subjects as string[], body.reason, actor)).map(batchResult),
      }),
      BATCH_SHAPE,
    ),
  );
  app.post(
    '/admin/subjects/status',
    { bodyLimit: SUBJECT_BODY_LIMIT },
    door('status', (body, actor) => erasures.status(body.subject, actor)),
  );
}

/** How a door reads its body (undefined: refused, its content never echoed) and says what it wants. */
interface BodyShape {
  read(body: unknown): Record<string, unknown> | undefined;
  says: string;
}

const fieldsShape = (fields: readonly string[]): BodyShape => ({ read: (body) => bodyOf(body, fields), says: `${fields.join(' and ')} (strings)` });

/** A batch: exactly `subjects` (1 to BULK_ERASURE_MAX strings) and `reason` (a string). */
const BATCH_SHAPE: BodyShape = {
  says: `subjects (1 to ${BULK_ERASURE_MAX} strings) and reason (a string)`,
  read(body) {
    if (typeof body !== 'object' || body === null || Array.isArray(body)) return undefined;
    const { subjects, reason, ...rest } = body as Record<string, unknown>;
    if (Object.keys(rest).length || typeof reason !== 'string' || !Array.isArray(subjects) || subjects.length === 0 || subjects.length > BULK_ERASURE_MAX)
      return undefined;
    return subjects.every((s) => typeof s === 'string') ? { subjects, reason } : undefined;
  },
};

/** One subject's answer in a batch: its receipt and claims, or its error as the problem body names it (never the id). */
function batchResult(outcome: BulkErasure): unknown {
  if (outcome.error) return { error: { code: outcome.error.code, message: outcome.error.message } };
  const { receipt, claims } = outcome.result;
  return { receipt, claims };
}

/** The body as an object of exactly `fields`, each a string; undefined otherwise (its content is never echoed). */
function bodyOf(body: unknown, fields: readonly string[]): Record<string, unknown> | undefined {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return undefined;
  const keys = Object.keys(body);
  if (keys.length !== fields.length || !fields.every((f) => keys.includes(f) && typeof (body as Record<string, unknown>)[f] === 'string')) return undefined;
  return body as Record<string, unknown>;
}
