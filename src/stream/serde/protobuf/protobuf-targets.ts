import { memo } from '../../memo.ts';
import { schemaUnfit, unfitReason } from '../../stream-error.ts';
import type { SchemaRegistryPort } from '../../registry/index.ts';
import { deriveCleanProtobuf } from './protobuf-clean.ts';
import { compilePlan, type PlanNode } from './protobuf-plan.ts';
import { messageAt, parseProtoSchema, protoTaggedFields, type ProtoMessage, type ProtoSchema } from './protobuf-schema.ts';
import { planTags, type SchemaTags } from '../schema-tags.ts';

/** what one (raw schema id, message indexes) resolves to, once: its plan and clean schema, or why the pipeline refuses it */
export type Target =
  { key: string; schema: ProtoSchema; message: ProtoMessage; plan: PlanNode; cleanText: string; tags: SchemaTags } | { error: string; unknownPath?: string };

/**
 * The Protobuf serde's schemas, resolved once per schema id (and message indexes): the parsed
 * schema, and for the record's message the plan of the pipeline's paths (mapped paths first,
 * then the fields the schema tags with a tag the pipeline maps) and the clean schema text.
 */
export class ProtobufTargets {
  private readonly schemas = new Map<number, Promise<ProtoSchema | { error: string }>>();
  private readonly targets = new Map<string, Promise<Target>>();

  private readonly registry: SchemaRegistryPort;
  private readonly protectedPaths: readonly string[];
  private readonly mappedTags: ReadonlySet<string>;

  constructor(registry: SchemaRegistryPort, protectedPaths: readonly string[], mappedTags: ReadonlySet<string>) {
    this.registry = registry;
    this.protectedPaths = protectedPaths;
    this.mappedTags = mappedTags;
  }

  schemaOf(id: number): Promise<ProtoSchema | { error: string }> {
    return memo(this.schemas, id, async () => {
      const text = await this.registry.schemaById(id);
      try {
        return parseProtoSchema(text);
      } catch (e) {
        return { error: unfitReason(e)?.error ?? 'it does not parse' };
      }
    });
  }

  targetOf(id: number, indexes: number[]): Promise<Target> {
    const key = `${id}:${indexes.join(',')}`;
    return memo(this.targets, key, async (): Promise<Target> => {
      const schema = await this.schemaOf(id);
      if ('error' in schema) return schema;
      const message = messageAt(schema, indexes);
      if (!message) return { error: `it has no message at index [${indexes.join(', ')}]` };
      try {
        return { key, schema, message, ...this.plan(schema, message) };
      } catch (e) {
        const unfit = unfitReason(e);
        if (unfit) return unfit;
        throw e;
      }
    });
  }

  private plan(schema: ProtoSchema, message: ProtoMessage): { plan: PlanNode; cleanText: string; tags: SchemaTags } {
    // the mapped paths first: a path the schema lacks is named before anything the tags add
    const tags = planTags(protoTaggedFields(schema, message), this.protectedPaths, this.mappedTags, false);
    const { plan, retypes } = compilePlan(schema, message, [...this.protectedPaths, ...tags.mapped.map((t) => t.path)]);
    const cleanText = deriveCleanProtobuf(schema, retypes);
    checkClean(
      cleanText,
      retypes.map((r) => `${r.message}#${r.field}`),
    );
    return { plan, cleanText, tags };
  }
}

/** The derived schema parses and has every retyped field as a string: else nothing is registered. */
function checkClean(text: string, retyped: string[]): void {
  const clean = parseProtoSchema(text);
  for (const key of retyped) {
    const [message, number] = key.split('#') as [string, string];
    const field = clean.messages.get(message)?.fields.find((f) => f.number === Number(number));
    if (field?.kind !== 'string') throw schemaUnfit(`the clean schema could not make ${message} field ${number} a string`);
  }
}
