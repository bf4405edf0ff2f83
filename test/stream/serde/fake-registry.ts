import type { SchemaRegistryPort } from '../../../src/stream/registry/registry-port.ts';
import { StreamError } from '../../../src/stream/stream-error.ts';

/** An in-memory Confluent-style registry: ids by schema text, versions per subject, call counts. */
export class FakeRegistry implements SchemaRegistryPort {
  readonly schemas = new Map<number, string>();
  readonly subjects = new Map<string, number[]>();
  readonly calls = { schemaById: 0, register: 0 };
  /** the schemaType each registration named, by id */
  readonly types = new Map<number, string>();
  /** set to make the next calls fail (retriable) */
  down = false;
  private nextId = 100;

  /** registers a raw schema directly (the producer's side) */
  add(schema: unknown, subject = 'raw-value'): number {
    return this.registerSync(subject, typeof schema === 'string' ? schema : JSON.stringify(schema));
  }

  async schemaById(id: number): Promise<string> {
    this.calls.schemaById++;
    await Promise.resolve();
    if (this.down) throw new StreamError('REGISTRY_UNAVAILABLE', 'fake registry down');
    const schema = this.schemas.get(id);
    if (schema === undefined) throw new StreamError('SCHEMA_UNKNOWN', `schema ${id} not found`);
    return schema;
  }

  async register(subject: string, schema: string, schemaType = 'AVRO'): Promise<number> {
    this.calls.register++;
    await Promise.resolve();
    if (this.down) throw new StreamError('REGISTRY_UNAVAILABLE', 'fake registry down');
    const id = this.registerSync(subject, schema);
    this.types.set(id, schemaType);
    return id;
  }

  /** the schema text of a subject's latest version */
  latest(subject: string): string {
    const ids = this.subjects.get(subject);
    if (!ids?.length) throw new Error(`no subject ${subject}`);
    return this.schemas.get(ids.at(-1)!)!;
  }

  private registerSync(subject: string, schema: string): number {
    let id = [...this.schemas].find(([, s]) => s === schema)?.[0];
    if (id === undefined) {
      id = this.nextId++;
      this.schemas.set(id, schema);
    }
    const versions = this.subjects.get(subject) ?? [];
    if (!versions.includes(id)) versions.push(id);
    this.subjects.set(subject, versions);
    return id;
  }
}
