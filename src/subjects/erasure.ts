import { randomUUID } from 'node:crypto';
import type { AuditChannel, AuditEvent, AuditSink } from '../audit/index.ts';
import { AuditError } from '../audit/errors.ts';
import { VeilError } from '../engine/index.ts';
import { ADMIN_ROLE_NAMES, ADMIN_ROLES } from '../identity/index.ts';
import { SubjectsError } from './errors.ts';
import { ReceiptSigner, type ErasureReceipt, type ReceiptKeySource } from './receipt.ts';
import { assertSubjectId } from './subject-id.ts';
import type { Erasure, SubjectKeyStore, SubjectStatus } from './subject-store.ts';

export const REASON_MAX_CHARS = 500;
const BY_MAX_CHARS = 256;
// C0 and C1 controls: a reason or a name is one line of text in receipts, audit records and pages
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/u;
// a reason may not name the subject (it goes into the receipt and the audit); shorter ids are too
// likely to occur in ordinary words and numbers ("request 42") to be refused on sight
const NAMED_ID_MIN_CHARS = 4;

export type SubjectAction = 'erase' | 'status';

/** Who asks, through which door: `by` is what the receipt names — the authenticated caller, never a form field. */
export interface SubjectActor {
  by: string;
  channel: AuditChannel;
  requestId: string;
  /** the verified token's identity (the admin API, the portal); the command line has none */
  caller?: { clientId: string; subject: string; issuer: string };
}

export interface ErasureServiceOptions {
  store: SubjectKeyStore;
  /** the key set: receipts are signed by its veil-receipts key, created on first use */
  keys: ReceiptKeySource;
  audit: AuditSink;
  /** the receipts' iss: the service's issuer, or what the command line names */
  issuer: string;
  now: () => Date;
}

/** An erasure done: what the store destroyed and its signed receipt. */
export interface ErasureResult extends ErasureReceipt {
  erasure: Erasure;
}

/** One subject of a bulk erasure, in the order asked: its receipt, or why it was refused (the error names no id). */
export type BulkErasure = { result: ErasureResult; error?: undefined } | { result?: undefined; error: VeilError };

/** the most subjects one bulk call takes (the admin API's batch; the command line sends its file in batches of this) */
export const BULK_ERASURE_MAX = 1000;

/**
 * The erasure doors' one path (the admin API, the portal, the command line — issue 29): checks
 * the request, erases through the store, signs the receipt and records the audit event, which
 * names the subject by its reference only. The record is written before the receipt is returned:
 * when the audit sink fails the call answers AUDIT_UNAVAILABLE — the subject is erased, and erasing
 * again (idempotent) records it and returns a receipt marked alreadyErased. Refused attempts are
 * recorded best-effort, as refused transform calls are.
 */
export class ErasureService {
  private readonly options: ErasureServiceOptions;
  private readonly signer: ReceiptSigner;

  constructor(options: ErasureServiceOptions) {
    this.options = options;
    this.signer = new ReceiptSigner(options.keys, options.issuer);
  }

  /** ERASURE_NOT_PERMITTED (recorded) unless the roles hold the action's right: admin-publisher to erase, any admin role for a status. */
  async authorize(roles: readonly string[], action: SubjectAction, actor: SubjectActor): Promise<void> {
    if (permits(roles, action)) return;
    const right = action === 'erase' ? ADMIN_ROLES.publisher : 'an admin role';
    await this.refuse(action, actor, new SubjectsError('ERASURE_NOT_PERMITTED', `a subject ${action === 'erase' ? 'erasure' : 'status'} needs ${right}`));
  }

  async erase(subjectId: unknown, reason: unknown, actor: SubjectActor): Promise<ErasureResult> {
    try {
      checkBy(actor.by);
      assertSubjectId(subjectId);
      checkReason(reason, subjectId);
    } catch (e) {
      return this.refuse('erase', actor, e);
    }
    let erasure: Erasure | undefined;
    try {
      erasure = await this.options.store.erase(subjectId, { by: actor.by, reason });
      return await this.receipted(erasure, reason, actor);
    } catch (e) {
      if (e instanceof AuditError) throw e;
      return this.refuse('erase', actor, e, erasure ? { subject: erasure.subject, generation: erasure.generation, reason } : { reason });
    }
  }

  /**
   * Erases up to BULK_ERASURE_MAX subjects with one reason (a backlog of requests, accounts
   * closed): each checked as erase() checks it — one that is refused (not an id, named by the
   * reason) is that entry's error and recorded, the others go on — then erased together through the
   * store (one wait for every process, not one per subject), each receipt signed and each erasure
   * recorded in the audit before the batch returns. A failure of the store or the audit fails the
   * batch: what was erased stays erased, and the same batch again returns every receipt.
   */
  async eraseMany(subjectIds: readonly unknown[], reason: unknown, actor: SubjectActor): Promise<BulkErasure[]> {
    try {
      checkBy(actor.by);
      checkReason(reason);
      if (subjectIds.length > BULK_ERASURE_MAX) throw new SubjectsError('ERASURE_REQUEST_INVALID', `a bulk erasure takes at most ${BULK_ERASURE_MAX} subjects`);
    } catch (e) {
      return this.refuse('erase', actor, e);
    }
    const out: BulkErasure[] = new Array(subjectIds.length);
    const valid: { index: number; id: string }[] = [];
    for (const [index, id] of subjectIds.entries()) {
      try {
        assertSubjectId(id);
        checkReason(reason, id);
        valid.push({ index, id });
      } catch (e) {
        out[index] = { error: await this.refuse('erase', actor, e, { reason }).catch((refused: VeilError) => refused) };
      }
    }
    let erasures: Erasure[];
    try {
      erasures = await this.options.store.eraseMany(
        valid.map((v) => v.id),
        { by: actor.by, reason },
      );
    } catch (e) {
      return this.refuse('erase', actor, e, { reason });
    }
    for (const [k, erasure] of erasures.entries()) out[valid[k]!.index] = { result: await this.receipted(erasure, reason, actor) };
    return out;
  }

  /** The erasure's signed receipt, once its audit record is written (AUDIT_UNAVAILABLE otherwise). */
  private async receipted(erasure: Erasure, reason: string, actor: SubjectActor): Promise<ErasureResult> {
    const signed = await this.signer.sign(erasure, this.options.now());
    const { subject, generation, alreadyErased } = erasure;
    await this.record('subject.erase', actor, 'ok', { subject, generation, alreadyErased, receipt: signed.claims.jti, reason }, true);
    return { ...signed, erasure };
  }

  async status(subjectId: unknown, actor: SubjectActor): Promise<SubjectStatus> {
    try {
      checkBy(actor.by);
      assertSubjectId(subjectId);
    } catch (e) {
      return this.refuse('status', actor, e);
    }
    let status: SubjectStatus;
    try {
      status = await this.options.store.status(subjectId);
    } catch (e) {
      return this.refuse('status', actor, e);
    }
    // a look-up tells whether a person is known here: recorded before it is answered, like a read of a value
    await this.record(
      'subject.status',
      actor,
      'ok',
      { subject: status.subject, state: status.state, ...('generation' in status ? { generation: status.generation } : {}) },
      true,
    );
    return status;
  }

  /** Records a refused or failed attempt (best-effort) and throws its error; an unexpected one as INTERNAL, never its message. A door calls it for what it refuses itself (no token, a malformed body). */
  async refuse(action: SubjectAction, actor: SubjectActor, error: unknown, erasure?: AuditEvent['erasure']): Promise<never> {
    const known = error instanceof VeilError ? error : new VeilError('INTERNAL', `the subject ${action} failed unexpectedly`, [], { cause: error });
    const outcome = known.status < 500 ? 'denied' : 'failed';
    await this.record(`subject.${action}`, actor, outcome, erasure, false, known.code).catch(() => undefined);
    throw known;
  }

  private async record(
    action: string,
    actor: SubjectActor,
    outcome: AuditEvent['outcome'],
    erasure: AuditEvent['erasure'],
    required: boolean,
    code?: string,
  ): Promise<void> {
    const { caller } = actor;
    const event: AuditEvent = {
      eventId: randomUUID(),
      time: this.options.now().toISOString(),
      requestId: actor.requestId,
      channel: actor.channel,
      ...(caller ? { client: caller.clientId, subject: caller.subject, issuer: caller.issuer } : {}),
      outcome,
      ...(code ? { code } : {}),
      instances: 0,
      fields: [],
      admin: { action, ...(erasure?.subject ? { target: `subject ${erasure.subject}` } : {}) },
      ...(erasure ? { erasure } : {}),
    };
    try {
      await this.options.audit.record(event);
    } catch (e) {
      if (!required) throw e;
      throw new AuditError(
        'AUDIT_UNAVAILABLE',
        `the audit sink cannot record the ${action}: ${action === 'subject.erase' ? 'the subject is erased; erase it again to get its receipt' : 'nothing is answered'}`,
        { cause: e },
      );
    }
  }
}

/** Whether roles hold the right a subject action needs (the portal's rule: any admin role may read). */
export function permits(roles: readonly string[], action: SubjectAction): boolean {
  return action === 'erase' ? roles.includes(ADMIN_ROLES.publisher) : roles.some((r) => ADMIN_ROLE_NAMES.includes(r));
}

/** A reason: 1 to 500 characters of one line, not blank, not naming the subject. */
export function checkReason(reason: unknown, subjectId?: string): asserts reason is string {
  if (typeof reason !== 'string' || reason.trim() === '' || !reason.isWellFormed() || CONTROL.test(reason) || [...reason].length > REASON_MAX_CHARS) {
    throw new SubjectsError(
      'ERASURE_REQUEST_INVALID',
      `an erasure needs a reason of 1 to ${REASON_MAX_CHARS} characters on one line, without control characters`,
    );
  }
  if (subjectId !== undefined && [...subjectId].length >= NAMED_ID_MIN_CHARS && reason.toLowerCase().includes(subjectId.toLowerCase())) {
    throw new SubjectsError('ERASURE_REQUEST_INVALID', 'the reason names the subject: it goes into the receipt and the audit, which never hold a subject id');
  }
}

function checkBy(by: unknown): asserts by is string {
  if (typeof by !== 'string' || by.trim() === '' || !by.isWellFormed() || CONTROL.test(by) || [...by].length > BY_MAX_CHARS) {
    throw new SubjectsError('ERASURE_REQUEST_INVALID', `the eraser's name must be 1 to ${BY_MAX_CHARS} characters on one line`);
  }
}
