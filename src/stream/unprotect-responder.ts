import type { AuditSink } from '../audit/audit-sink.ts';
import { auditEvent } from '../audit/audit-event.ts';
import type { ResponderConfig } from './responder-config.ts';
import type { Engine, Plan } from '../engine/engine.ts';
import { VeilError } from '../engine/errors.ts';
import { problemOf } from '../http/problem.ts';
import type { BearerVerifier, Caller } from '../identity/token-verifier.ts';
import type { PipelineLog } from './protect-pipeline.ts';
import { headerValue, type Batch, type ConsumerPort, type Header, type InRecord, type KafkaPort, type OutRecord, type ProducerPort } from './ports.ts';
import { CORRELATION_ID, REPLY_STATUS_HEADER, REQUEST_HEADERS } from './unprotect-protocol.ts';

export interface ResponderDeps {
  name: string;
  config: ResponderConfig;
  engine: Engine;
  verifier: BearerVerifier;
  audit: AuditSink;
  kafka: KafkaPort;
  log: PipelineLog;
  now: () => Date;
}

const utf8 = (s: string) => Buffer.from(s, 'utf8');
const h = (key: string, value: string): Header => ({ key, value: utf8(value) });

/**
 * Serves transform requests (usually Unprotect) from a request topic, as its own consumer group.
 * Authorization is exactly the HTTP API's: the bearer token in the `authorization` header is
 * verified and a Role evidence counts only if the token carries it. Replies go only to configured
 * reply topics; a request without an allowed reply-to is never answered there but dead-lettered
 * (without its body). Every request is audited; values leave only after their audit record is
 * written. Replies are sent before the offset commit: a restart answers a request again rather
 * than dropping it (requesters match replies by correlation id).
 */
export class UnprotectResponder {
  readonly groupId: string;
  private readonly deps: ResponderDeps;
  private readonly allowed: ReadonlySet<string>;
  private consumer?: ConsumerPort;
  private producer?: Promise<ProducerPort>;

  constructor(deps: ResponderDeps) {
    this.deps = deps;
    this.groupId = deps.config.groupId ?? `veil-unprotect-${deps.name}`;
    this.allowed = new Set(deps.config.replyTopics);
  }

  async start(): Promise<void> {
    this.consumer = this.deps.kafka.consumer({ groupId: this.groupId, readCommitted: true });
    await this.consumer.subscribe([this.deps.config.requestTopic]);
    await this.consumer.run((batch) => this.handle(batch));
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
  async answer(record: InRecord): Promise<OutRecord> {
    const header = (name: string) => headerValue(record.headers, name)?.toString('utf8');
    const given = header(REQUEST_HEADERS.correlationId);
    const correlationId = given && CORRELATION_ID.test(given) ? given : undefined;
    const requestId = correlationId ?? `${record.topic}/${record.partition}/${record.offset}`;
    const replyTo = header(REQUEST_HEADERS.replyTo);
    if (!replyTo || !this.allowed.has(replyTo) || !correlationId) {
      const code = !correlationId ? 'REQUEST_MALFORMED' : 'REPLY_TOPIC_NOT_ALLOWED';
      await this.record({ requestId, outcome: 'denied', code });
      return {
        topic: this.deps.config.deadLetterTopic, key: record.key, value: null,
        headers: [
          h('veil.error.code', code), h('veil.responder', this.deps.name), h('veil.source.topic', record.topic),
          h('veil.source.partition', String(record.partition)), h('veil.source.offset', record.offset),
          ...(correlationId ? [h(REQUEST_HEADERS.correlationId, correlationId)] : []),
        ],
      };
    }
    let caller: Caller | undefined;
    let plan: Plan | undefined;
    let body: unknown;
    let value: unknown;
    let status = 200;
    try {
      const deadline = header(REQUEST_HEADERS.deadline);
      if (deadline !== undefined && !(Number(deadline) > this.deps.now().getTime())) {
        throw new VeilError('DEADLINE_EXCEEDED', 'the request arrived after its deadline and was not processed');
      }
      caller = await this.deps.verifier.verifyHeader(header(REQUEST_HEADERS.authorization));
      try {
        body = JSON.parse(record.value?.toString('utf8') ?? '');
      } catch {
        throw new VeilError('REQUEST_MALFORMED', 'the request value is not valid JSON', [{ code: 'REQUEST_MALFORMED', pointer: '', message: 'not valid JSON' }]);
      }
      plan = this.deps.engine.plan(body, caller);
      const response = this.deps.engine.execute(plan);
      try {
        await this.record({ requestId, caller, plan, outcome: 'ok' });
      } catch {
        throw new VeilError('AUDIT_UNAVAILABLE', 'the audit sink cannot record this request, so it was refused');
      }
      value = response;
    } catch (e) {
      const error = e instanceof VeilError ? e : new VeilError('INTERNAL', 'an unexpected error; nothing was transformed');
      if (!(e instanceof VeilError)) this.deps.log.error({ responder: this.deps.name, errorType: (e as Error).name }, 'unexpected error');
      status = error.status;
      value = { error: problemOf(error, requestId) };
      if (error.code !== 'AUDIT_UNAVAILABLE') {
        await this.record({ requestId, caller, plan, outcome: error.status === 401 || error.status === 403 ? 'denied' : 'failed', code: error.code, body }).catch(() => undefined);
      }
    }
    return {
      topic: replyTo,
      key: record.key,
      value: utf8(JSON.stringify(value)),
      headers: [h(REQUEST_HEADERS.correlationId, correlationId), h(REPLY_STATUS_HEADER, String(status))],
    };
  }

  private record(e: { requestId: string; caller?: Caller; plan?: Plan; outcome: 'ok' | 'denied' | 'failed'; code?: string; body?: unknown }): Promise<void> {
    return this.deps.audit.record(auditEvent({ ...e, channel: 'kafka', now: this.deps.now() }));
  }
}
