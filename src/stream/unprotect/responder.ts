import type { AuditSink } from '../../audit/index.ts';
import { auditEvent } from '../../audit/index.ts';
import { GuardedTransform } from '../../audit/index.ts';
import type { ResponderConfig } from '../config/index.ts';
import { VeilError, type Engine } from '../../engine/index.ts';
import { problemOf } from '../../errors/problem.ts';
import type { BearerVerifier } from '../../identity/index.ts';
import type { StreamLog } from '../log.ts';
import {
  headerValue,
  type Batch,
  type ConsumerPort,
  type Header,
  type InRecord,
  type KafkaPort,
  type OutRecord,
  type ProducerPort,
} from '../../kafka/index.ts';
import { openWithRetry } from '../../kafka/index.ts';
import { CORRELATION_ID, REPLY_STATUS_HEADER, REPLY_TRACEPARENT_HEADER, REQUEST_HEADERS } from './protocol.ts';
import { ATTR, OUTCOME_OK, SpanKind, SpanStatusCode, traceCarrierOf, TRACING_OFF, type Tracing } from '../../observability/index.ts';
import { StreamError } from '../stream-error.ts';
import { subjectKeysOf, type SubjectKeyStore } from '../../subjects/index.ts';

export interface ResponderDeps {
  name: string;
  config: ResponderConfig;
  engine: Engine;
  verifier: BearerVerifier;
  audit: AuditSink;
  kafka: KafkaPort;
  log: StreamLog;
  now: () => Date;
  /** how long start() waits for a broker it cannot reach yet (default 60 s) */
  startTimeoutMs?: number;
  /** a span per request when tracing is on; default off */
  tracing?: Tracing;
  /** the configuration version the engine was built from, named on the spans */
  configVersion?: string;
  /** the subject-key store: requests whose Subject evidence names a data subject (subject-scoped keys) */
  subjects?: SubjectKeyStore;
}

export const REQUEST_SPAN = 'stream.unprotect request';

/** What answering one request came to, for its span: the refusal's code, or how many values it transformed. */
interface AnswerNote {
  code?: string;
  values: number;
}

const utf8 = (s: string) => Buffer.from(s, 'utf8');
const h = (key: string, value: string): Header => ({ key, value: utf8(value) });

/**
 * Serves transform requests (usually Unprotect) from a request topic, as its own consumer group.
 * Authorization is exactly the HTTP API's: the bearer token in the `authorization` header is
 * verified and a Role evidence counts only if the token carries it. Replies go only to configured
 * reply topics; a request without an allowed reply-to is never answered there but dead-lettered
 * (without its body). Every request is audited; values leave only after their audit record is
 * written (GuardedTransform, scope `every`: the HTTP API's rule). Replies are sent before the offset commit: a restart answers a request again rather
 * than dropping it (requesters match replies by correlation id).
 */
export class UnprotectResponder {
  readonly groupId: string;
  private readonly deps: ResponderDeps;
  private readonly allowed: ReadonlySet<string>;
  private guard: GuardedTransform;
  private consumer?: ConsumerPort;
  private producer?: Promise<ProducerPort>;
  private readonly tracing: Tracing;
  private configVersion: string | undefined;

  constructor(deps: ResponderDeps) {
    this.deps = deps;
    this.groupId = deps.config.groupId ?? `veil-unprotect-${deps.name}`;
    this.allowed = new Set(deps.config.replyTopics);
    this.guard = this.guardOf(deps.engine);
    this.tracing = deps.tracing ?? TRACING_OFF;
    this.configVersion = deps.configVersion;
  }

  /** Requests from now on run on `engine` (a configuration version published since the start). */
  useEngine(engine: Engine, configVersion?: string): void {
    this.configVersion = configVersion;
    this.guard = this.guardOf(engine);
  }

  private guardOf(engine: Engine): GuardedTransform {
    return new GuardedTransform({ engine, audit: this.deps.audit, now: this.deps.now, channel: 'kafka', scope: 'every', ...subjectKeysOf(this.deps.subjects) });
  }

  /** Joins the group; a broker that cannot be reached yet is waited for (start-retry.ts). */
  async start(): Promise<void> {
    await openWithRetry(
      async () => {
        this.consumer = this.deps.kafka.consumer({ groupId: this.groupId, readCommitted: true });
        await this.consumer.subscribe([this.deps.config.requestTopic]);
        await this.consumer.run((batch) => this.handle(batch));
      },
      {
        timeoutMs: this.deps.startTimeoutMs ?? 60_000,
        onRetry: (e, inMs) => this.deps.log.warn({ responder: this.deps.name, error: e.name, retryInMs: inMs }, 'Kafka cannot be reached yet; trying again'),
        reset: async () => {
          const half = this.consumer;
          this.consumer = undefined;
          await half?.disconnect().catch(() => undefined);
        },
      },
    );
  }

  async stop(): Promise<void> {
    await this.consumer?.disconnect();
    if (this.producer) await (await this.producer).disconnect().catch(() => undefined);
  }

  private async handle(batch: Batch): Promise<void> {
    const out: OutRecord[] = [];
    for (const record of batch.records) out.push(await this.answer(record));
    this.producer ??= this.deps.kafka.producer({});
    await (await this.producer).send(out);
    await this.consumer!.commitOffsets(batch.topic, batch.partition, (BigInt(batch.records.at(-1)!.offset) + 1n).toString());
  }

  /** The reply to one request, or its dead letter when it names no allowed reply topic. */
  answer(record: InRecord): Promise<OutRecord> {
    return this.tracing.enabled ? this.tracedAnswer(record) : this.respond(record);
  }

  /**
   * answer() in a CONSUMER span continuing the request's W3C trace context (else a trace of its
   * own): responder, configuration version, outcome (`ok` or the code), status and the number of
   * values. A reply to a request that named a trace carries a traceparent naming this span; a
   * dead letter carries none (it goes to operators, not to the requester).
   */
  private async tracedAnswer(record: InRecord): Promise<OutRecord> {
    const carrier = traceCarrierOf(record.headers);
    const parent = carrier && this.tracing.remote(carrier);
    const span = this.tracing.start(REQUEST_SPAN, {
      kind: SpanKind.CONSUMER,
      parent,
      attributes: {
        [ATTR.responder]: this.deps.name,
        [ATTR.messagingSystem]: 'kafka',
        [ATTR.messagingOperationType]: 'process',
        [ATTR.messagingDestination]: record.topic,
        [ATTR.messagingPartition]: String(record.partition),
        [ATTR.kafkaOffset]: Number(record.offset),
        ...(this.configVersion ? { [ATTR.configVersion]: this.configVersion } : {}),
      },
    });
    const note: AnswerNote = { values: 0 };
    try {
      const out = await this.respond(record, note);
      span.setAttributes({ [ATTR.outcome]: note.code ?? OUTCOME_OK, [ATTR.values]: note.values });
      const status = headerValue(out.headers, REPLY_STATUS_HEADER)?.toString();
      if (status !== undefined) span.setAttribute(ATTR.httpStatus, Number(status));
      if (status === undefined || Number(status) >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      if (parent === undefined || status === undefined) return out;
      return { ...out, headers: [...out.headers, { key: REPLY_TRACEPARENT_HEADER, value: utf8(this.tracing.traceparent(span)) }] };
    } catch (e) {
      span.setAttribute(ATTR.outcome, (e as { code?: string }).code ?? 'INTERNAL');
      span.setStatus({ code: SpanStatusCode.ERROR });
      throw e;
    } finally {
      span.end();
    }
  }

  private async respond(record: InRecord, note?: AnswerNote): Promise<OutRecord> {
    const header = (name: string) => headerValue(record.headers, name)?.toString('utf8');
    const given = header(REQUEST_HEADERS.correlationId);
    const correlationId = given && CORRELATION_ID.test(given) ? given : undefined;
    const requestId = correlationId ?? `${record.topic}/${record.partition}/${record.offset}`;
    const replyTo = header(REQUEST_HEADERS.replyTo);
    if (!replyTo || !this.allowed.has(replyTo) || !correlationId) {
      const code = !correlationId ? 'REQUEST_MALFORMED' : 'REPLY_TOPIC_NOT_ALLOWED';
      if (note) note.code = code;
      await this.record({ requestId, outcome: 'denied', code });
      return {
        topic: this.deps.config.deadLetterTopic,
        key: record.key,
        value: null,
        headers: [
          h('veil.error.code', code),
          h('veil.responder', this.deps.name),
          h('veil.source.topic', record.topic),
          h('veil.source.partition', String(record.partition)),
          h('veil.source.offset', record.offset),
          ...(correlationId ? [h(REQUEST_HEADERS.correlationId, correlationId)] : []),
        ],
      };
    }
    const outcome = await this.guard.run({
      requestId,
      authenticate: () => {
        const deadline = header(REQUEST_HEADERS.deadline);
        if (deadline !== undefined && !(Number(deadline) > this.deps.now().getTime())) {
          throw new StreamError('DEADLINE_EXCEEDED', 'the request arrived after its deadline and was not processed');
        }
        return this.deps.verifier.verifyHeader(header(REQUEST_HEADERS.authorization));
      },
      admit: () => {
        try {
          return JSON.parse(record.value?.toString('utf8') ?? '');
        } catch {
          throw new VeilError('REQUEST_MALFORMED', 'the request value is not valid JSON', [
            { code: 'REQUEST_MALFORMED', pointer: '', message: 'not valid JSON' },
          ]);
        }
      },
      warn: (message) => this.deps.log.warn({ responder: this.deps.name, requestId }, message),
    });
    if (!outcome.ok && 'unexpected' in outcome)
      this.deps.log.error({ responder: this.deps.name, errorType: (outcome.unexpected as Error | undefined)?.name }, 'unexpected error');
    if (note) {
      if (outcome.ok) note.values = outcome.plan.requests.reduce((n, r) => n + r.instances.length, 0);
      else note.code = outcome.error.code;
    }
    const status = outcome.ok ? 200 : outcome.error.status;
    const value = outcome.ok ? outcome.response : { error: problemOf(outcome.error, requestId) };
    return {
      topic: replyTo,
      key: record.key,
      value: utf8(JSON.stringify(value)),
      headers: [h(REQUEST_HEADERS.correlationId, correlationId), h(REPLY_STATUS_HEADER, String(status))],
    };
  }

  /** The record of a request refused before it reaches the guarded transform (no allowed reply-to). */
  private record(e: { requestId: string; outcome: 'denied'; code: string }): Promise<void> {
    return this.deps.audit.record(auditEvent({ ...e, channel: 'kafka', now: this.deps.now() }));
  }
}
