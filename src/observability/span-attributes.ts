/**
 * The attribute names veil's spans carry, in one place (docs/operations.md, "Traces"). Each names a
 * count, a code, a configuration version or a configured name (pipeline, route, responder, topic,
 * field): never a value, key, token or secret. Standard names follow the OpenTelemetry semantic
 * conventions (HTTP's stable ones; messaging's, which are still incubating, written out here as
 * their documentation advises rather than imported from the incubating entry point).
 */
export const ATTR = {
  // veil's own
  outcome: 'veil.outcome',
  configVersion: 'veil.config.version',
  pipeline: 'veil.pipeline',
  delivery: 'veil.delivery',
  route: 'veil.route',
  responder: 'veil.responder',
  requests: 'veil.requests',
  values: 'veil.values',
  fields: 'veil.fields',
  actions: 'veil.actions',
  requestValues: 'veil.values.request',
  responseValues: 'veil.values.response',
  unmappedFindings: 'veil.unmapped.findings',
  records: 'veil.records',
  recordsClean: 'veil.records.clean',
  recordsDeadLettered: 'veil.records.dead_lettered',
  recordsTraced: 'veil.records.traced',
  transactionOutcome: 'veil.transaction.outcome',
  // HTTP (stable semantic conventions)
  httpMethod: 'http.request.method',
  httpRoute: 'http.route',
  httpStatus: 'http.response.status_code',
  urlScheme: 'url.scheme',
  urlPath: 'url.path',
  // stable, across conventions: set only when the call failed (errorType below)
  errorType: 'error.type',
  // messaging (incubating semantic conventions)
  messagingSystem: 'messaging.system',
  messagingOperationType: 'messaging.operation.type',
  messagingOperationName: 'messaging.operation.name',
  messagingDestination: 'messaging.destination.name',
  messagingPartition: 'messaging.destination.partition.id',
  messagingGroup: 'messaging.consumer.group.name',
  messagingBatchCount: 'messaging.batch.message_count',
  kafkaOffset: 'messaging.kafka.offset',
} as const;

/** veil.outcome of a call or record that went through: a refusal's is its error code. */
export const OUTCOME_OK = 'ok';

/** An error code of veil's catalog (docs/errors.md), as a refusal's outcome names it. */
const ERROR_CODE = /^[A-Z][A-Z0-9_]{0,63}$/;

/**
 * `error.type` of an HTTP server span, or undefined for a call that did not fail: only a 5xx is a
 * server span's error (a 4xx is the caller's, per the HTTP semantic conventions). It is the veil
 * error code the caller got when there is one — INTERNAL for a thrown error, whose name and
 * message stay out of the span — else the status code as text (`502` from an upstream). A code
 * from a closed list, never a message or a value.
 */
export function httpErrorType(status: number, code: string | undefined): string | undefined {
  if (status < 500) return undefined;
  return code !== undefined && ERROR_CODE.test(code) ? code : String(status);
}
