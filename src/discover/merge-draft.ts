import { isMap, isSeq, parse, parseDocument, stringify, type YAMLMap } from 'yaml';

/**
 * A proposal (propose()) merged into an existing configuration text, so that a draft made from
 * it keeps everything the configuration has: keys, sequences, rights and processing contexts and
 * pipelines it lacks are added by name (an existing one is kept as it is), a class it has gains
 * the properties it lacks, a rights context of the same name gains the proposal's grants, and a
 * pipeline whose name is taken is added as `<name>-discovered`. Comments and order of the existing
 * text are kept.
 */
export function mergeProposal(existing: string, proposalYaml: string): string {
  const doc = parseDocument(existing);
  const proposal = parse(proposalYaml) as Record<string, Record<string, unknown> | undefined>;
  const section = (name: string): YAMLMap => {
    const node = doc.get(name);
    if (isMap(node)) return node;
    doc.set(name, doc.createNode({}));
    return doc.get(name) as YAMLMap;
  };
  for (const name of ['keys', 'sequences', 'processingContexts'] as const) {
    for (const [entry, value] of Object.entries(proposal[name] ?? {})) if (!section(name).has(entry)) section(name).set(entry, doc.createNode(value));
  }
  for (const [className, value] of Object.entries(proposal.classes ?? {})) {
    const classes = section('classes');
    const properties = (value as { properties: Record<string, unknown> }).properties;
    const existingClass = classes.get(className);
    if (!isMap(existingClass)) {
      classes.set(className, doc.createNode(value));
      continue;
    }
    if (!isMap(existingClass.get('properties'))) existingClass.set('properties', doc.createNode({}));
    const props = existingClass.get('properties') as YAMLMap;
    for (const [property, p] of Object.entries(properties)) if (!props.has(property)) props.set(property, doc.createNode(p));
  }
  for (const [context, value] of Object.entries(proposal.rightsContexts ?? {})) {
    const contexts = section('rightsContexts');
    const present = contexts.get(context);
    if (!isMap(present)) {
      contexts.set(context, doc.createNode(value));
      continue;
    }
    if (!isSeq(present.get('grants'))) present.set('grants', doc.createNode([]));
    const grants = present.get('grants') as { add(v: unknown): void };
    for (const grant of (value as { grants: unknown[] }).grants) grants.add(doc.createNode(grant));
  }
  for (const [pipeline, value] of Object.entries(proposal.pipelines ?? {})) {
    const pipelines = section('pipelines');
    pipelines.set(pipelines.has(pipeline) ? `${pipeline}-discovered` : pipeline, doc.createNode(value));
  }
  return doc.toString();
}

/** What mergePipelineFields adds to one existing pipeline. */
export interface PipelineFieldsMerge {
  /** the pipeline whose `fields` gains the entries (it must exist, with a `fields` list) */
  pipeline: string;
  /** each added as a flow map `{ path, field }`, with its comment after it */
  fields: readonly { path: string; field: string; comment?: string }[];
  /** a rights context that gains a grant of Protect on these fields (the pipeline's identity lacks one) */
  grant?: { context: string; fields: readonly string[] };
}

/**
 * Paths mapped into an existing pipeline: the keys, sequences and classes of `proposalYaml` are
 * merged as mergeProposal merges them (what the configuration has is kept; a class gains the
 * properties it lacks), the pipeline's `fields` gains `{ path, field }` for each entry, and with
 * `grant` that rights context gains `{ actions: [Protect], fields }`. Nothing else of the proposal
 * (its rights and processing contexts, pipelines) is taken. Comments and order are kept.
 */
export function mergePipelineFields(existing: string, proposalYaml: string, merge: PipelineFieldsMerge): string {
  const proposal = parse(proposalYaml) as Record<string, unknown>;
  const { keys, sequences, classes } = proposal;
  const doc = parseDocument(mergeProposal(existing, stringify({ keys: keys ?? {}, sequences: sequences ?? {}, classes: classes ?? {} })));
  const pipeline = doc.getIn(['pipelines', merge.pipeline]);
  const fields = isMap(pipeline) ? pipeline.get('fields') : undefined;
  if (!isSeq(fields)) throw new Error(`pipeline ${merge.pipeline} has no fields list`);
  for (const f of merge.fields) {
    const node = doc.createNode({ path: f.path, field: f.field }, { flow: true });
    if (f.comment) node.comment = ` ${f.comment.replace(/[\r\n]+/g, ' ')}`;
    fields.add(node);
  }
  if (merge.grant && merge.grant.fields.length) {
    const context = doc.getIn(['rightsContexts', merge.grant.context]);
    if (!isMap(context)) throw new Error(`rights context ${merge.grant.context} is not configured`);
    if (!isSeq(context.get('grants'))) context.set('grants', doc.createNode([]));
    (context.get('grants') as { add(v: unknown): void }).add(doc.createNode({ actions: ['Protect'], fields: [...merge.grant.fields] }));
  }
  return doc.toString();
}
