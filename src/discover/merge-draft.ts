import { isMap, isSeq, parse, parseDocument, type YAMLMap } from 'yaml';

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
