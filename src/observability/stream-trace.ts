import { traceCarrierOf, withTraceparent, type RecordHeader } from './kafka-trace.ts';
import { ATTR } from './span-attributes.ts';
import { SpanKind, SpanStatusCode, type Attributes, type Link, type Span, type Tracing } from './tracing.ts';

export const TRANSACTION_SPAN = 'stream.protect transaction';
export const RECORD_SPAN = 'stream.protect record';
/** `veil stream rewrap`'s spans: the same, named for what it does */
export const REWRAP_TRANSACTION_SPAN = 'stream.rewrap transaction';
export const REWRAP_RECORD_SPAN = 'stream.rewrap record';

/** What a batch's spans say about it: names and numbers of the configuration and the partition. */
export interface BatchInfo {
  pipeline: string;
  topic: string;
  partition: number;
  group: string;
  configVersion: string;
  delivery: string;
  /** records fetched in the batch */
  fetched: number;
  /** `veil stream rewrap` re-protecting a clean topic, else protect */
  rewrap?: boolean;
}

/** What a finished batch did: `outcome` is `committed`, `skipped` (an earlier owner had committed it all) or the abort's code. */
export interface BatchEnd {
  outcome: string;
  /** records produced (clean and dead letters) */
  records: number;
  deadLettered: number;
}

/**
 * The spans of one transaction of `veil stream protect` (one batch of one partition): a span for
 * the transaction, a root of its own, and a span for each record whose raw form carries a W3C
 * traceparent — a child of the producer's span, linked to the transaction's — whose context the
 * clean record's traceparent carries on. A record without a (valid, single) traceparent gets no
 * span and its headers go out byte for byte as before. Created only when tracing is on.
 */
export class BatchTrace {
  private readonly tracing: Tracing;
  private readonly span: Span;
  private readonly links: Link[];
  private readonly base: Attributes;
  private readonly startTime = Date.now();
  private readonly recordSpans: Span[] = [];
  private readonly recordSpan: string;

  constructor(tracing: Tracing, info: BatchInfo) {
    this.tracing = tracing;
    this.recordSpan = info.rewrap ? REWRAP_RECORD_SPAN : RECORD_SPAN;
    this.base = {
      [ATTR.messagingSystem]: 'kafka',
      [ATTR.messagingOperationType]: 'process',
      [ATTR.messagingOperationName]: info.rewrap ? 'rewrap' : 'protect',
      [ATTR.messagingDestination]: info.topic,
      [ATTR.messagingPartition]: String(info.partition),
      [ATTR.messagingGroup]: info.group,
      [ATTR.pipeline]: info.pipeline,
      [ATTR.configVersion]: info.configVersion,
    };
    this.span = tracing.start(info.rewrap ? REWRAP_TRANSACTION_SPAN : TRANSACTION_SPAN, {
      kind: SpanKind.CONSUMER,
      startTime: this.startTime,
      attributes: { ...this.base, [ATTR.delivery]: info.delivery, [ATTR.messagingBatchCount]: info.fetched },
    });
    this.links = [{ context: this.span.spanContext() }];
  }

  /**
   * `out` as it goes to Kafka. A raw record naming a trace gets a span (its outcome: `clean`, or the
   * dead letter's code), and when it goes out clean its traceparent names that span, keeping the
   * producer's trace id. A dead letter is the raw record: its headers stay as they came.
   */
  record<O extends { headers: readonly RecordHeader[] }>(
    raw: { offset: string; headers: readonly RecordHeader[] },
    out: O,
    deadLetterCode: string | undefined,
  ): O {
    const carrier = traceCarrierOf(raw.headers);
    const parent = carrier && this.tracing.remote(carrier);
    if (parent === undefined) return out;
    const span = this.tracing.start(this.recordSpan, {
      kind: SpanKind.CONSUMER,
      parent,
      links: this.links,
      startTime: this.startTime,
      attributes: { ...this.base, [ATTR.kafkaOffset]: Number(raw.offset), [ATTR.outcome]: deadLetterCode ?? 'clean' },
    });
    this.recordSpans.push(span);
    if (deadLetterCode !== undefined) return out;
    return { ...out, headers: withTraceparent(out.headers, this.tracing.traceparent(span)) };
  }

  /** Ends the record spans and the transaction's: an aborted transaction marks them all as errors (its records are read again). */
  end(e: BatchEnd): void {
    const failed = e.outcome !== 'committed' && e.outcome !== 'skipped';
    for (const span of this.recordSpans) {
      span.setAttribute(ATTR.transactionOutcome, e.outcome);
      if (failed) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    }
    this.span.setAttributes({
      [ATTR.outcome]: e.outcome,
      [ATTR.records]: e.records,
      [ATTR.recordsClean]: e.records - e.deadLettered,
      [ATTR.recordsDeadLettered]: e.deadLettered,
      [ATTR.recordsTraced]: this.recordSpans.length,
    });
    if (failed) this.span.setStatus({ code: SpanStatusCode.ERROR });
    this.span.end();
  }
}
