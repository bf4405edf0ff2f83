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
