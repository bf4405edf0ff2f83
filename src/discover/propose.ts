import { stringify } from 'yaml';
import type { Kind } from './detectors.ts';
import type { RecordFormat } from './record-formats.ts';
import { KEY_PATH, MASKED, type Finding } from './profile.ts';

/** How each kind is protected in a proposal, and the property it becomes. */
const PLAN: Record<Kind, { property: string; sequence: string; steps: Record<string, unknown>[]; key: string }> = {
  email: { property: 'email', sequence: 'email-deterministic', key: 'discovered-siv', steps: [{ type: 'aes-siv', key: 'discovered-siv' }] },
  'payment-card': {
    property: 'cardNumber',
    sequence: 'card-fpe',
    key: 'discovered-ff1',
    steps: [{ type: 'ff1', key: 'discovered-ff1', alphabet: 'digits', keepFirst: 2, keepLast: 4 }],
  },
  iban: { property: 'iban', sequence: 'id-fpe', key: 'discovered-ff1', steps: [{ type: 'ff1', key: 'discovered-ff1', alphabet: 'alnum' }] },
  phone: { property: 'phone', sequence: 'phone-fpe', key: 'discovered-ff1', steps: [{ type: 'ff1', key: 'discovered-ff1', alphabet: 'digits', keepFirst: 2 }] },
  'us-ssn': { property: 'ssn', sequence: 'id-fpe', key: 'discovered-ff1', steps: [{ type: 'ff1', key: 'discovered-ff1', alphabet: 'alnum' }] },
  'uk-nino': { property: 'nino', sequence: 'id-fpe', key: 'discovered-ff1', steps: [{ type: 'ff1', key: 'discovered-ff1', alphabet: 'alnum' }] },
  'fr-nir': { property: 'nir', sequence: 'id-fpe', key: 'discovered-ff1', steps: [{ type: 'ff1', key: 'discovered-ff1', alphabet: 'alnum' }] },
  'ip-address': { property: 'ipAddress', sequence: 'ip-deterministic', key: 'discovered-siv', steps: [{ type: 'aes-siv', key: 'discovered-siv' }] },
  'date-of-birth': {
    property: 'dateOfBirth',
    sequence: 'date-fpe',
    key: 'discovered-ff1',
    steps: [{ type: 'ff1', key: 'discovered-ff1', alphabet: 'digits' }],
  },
  'person-name': { property: 'name', sequence: 'name-randomized', key: 'discovered-gcm', steps: [{ type: 'aes-gcm', key: 'discovered-gcm' }] },
  'postal-address': { property: 'address', sequence: 'address-randomized', key: 'discovered-gcm', steps: [{ type: 'aes-gcm', key: 'discovered-gcm' }] },
};
const KEYS: Record<string, Record<string, unknown>> = {
  'discovered-siv': { type: 'aes-siv' },
  'discovered-gcm': { type: 'aes-gcm' },
  // FPE output has no room for a key version: pinned
  'discovered-ff1': { type: 'ff1', version: 1 },
};

/** How a proposal protects a kind: the property it becomes, its sequence (name, steps) and the key that needs (name, configuration). */
export function protectionOf(kind: Kind): {
  property: string;
  sequence: string;
  steps: Record<string, unknown>[];
  key: string;
  keyConfig: Record<string, unknown>;
} {
  const plan = PLAN[kind];
  return structuredClone({ ...plan, keyConfig: KEYS[plan.key]! });
}

export interface ProposalSource {
  /** a Kafka topic: the draft has a protect pipeline reading it */
  topic?: string;
  format?: RecordFormat;
}

export interface Proposal {
  /** the configuration draft, as YAML (`veil config validate` accepts it) */
  yaml: string;
  /** per finding, the Class.property it protects as */
  fields: { path: string; field: string }[];
}

/** the last word of letters only in a source name: `raw.customers.v2`, `raw.customers.bf00fdf2` → `customers` */
function lastWord(source: string | undefined): string {
  return (
    (source ?? '')
      .split(/[^A-Za-z0-9]+/)
      .filter((w) => /^[A-Za-z]+$/.test(w))
      .at(-1) ?? 'record'
  );
}

/** `raw.customers` → `Customer`: the class the draft names */
export function classNameFor(source: string | undefined): string {
  const word = lastWord(source);
  const singular = word.length > 3 && word.endsWith('s') && !word.endsWith('ss') ? word.slice(0, -1) : word;
  return singular.charAt(0).toUpperCase() + singular.slice(1);
}

/**
 * A configuration draft from findings: one class with a property per kind found, the sequence fitting each kind (card → FF1
 * keeping BIN and last 4; email → AES-SIV; names → AES-GCM; ids → FF1), the keys those need, a
 * rights context `ingest` that may protect them, and for a topic a protect pipeline mapping each
 * field (the record key too, when it was found to be personal data).
 */
export function propose(findings: readonly Finding[], source: ProposalSource = {}): Proposal {
  const className = classNameFor(source.topic);
  const properties: Record<string, { protect: string; description: string }> = {};
  const sequences: Record<string, unknown> = {};
  const keys: Record<string, unknown> = {};
  const fields: { path: string; field: string }[] = [];
  // a path under a map whose keys may be data (`*`) has no pipeline path: reported, not drafted
  for (const f of findings.filter((x) => !x.path.split(/[.[\]]/).includes(MASKED))) {
    const plan = PLAN[f.kind];
    // one property per kind: fields of a kind protect alike (an email key as its email field, so they still join)
    const property = plan.property;
    const found = `${f.path} (${f.matched} of ${f.values} sampled values)`;
    properties[property] = properties[property]
      ? { ...properties[property], description: `${properties[property].description}; ${found}` }
      : { protect: plan.sequence, description: `${f.kind} found at ${found}` };
    sequences[plan.sequence] = { steps: plan.steps };
    keys[plan.key] = KEYS[plan.key];
    fields.push({ path: f.path, field: `${className}.${property}` });
  }
  const draft: Record<string, unknown> = {
    version: 1,
    description: `Draft proposed by veil discover${source.topic ? ` from topic ${source.topic}` : ''}: review it before use`,
    keys,
    sequences,
    classes: { [className]: { properties } },
    rightsContexts: { ingest: { evidences: { Role: 'ingest' }, grants: [{ actions: ['Protect'], fields: [`${className}.*`] }] } },
    processingContexts: { protect: { evidences: { Action: 'Protect' } } },
  };
  if (source.topic && fields.some((f) => f.path !== KEY_PATH)) {
    const name = lastWord(source.topic);
    const key = fields.find((f) => f.path === KEY_PATH);
    draft.pipelines = {
      [name]: {
        source: { topics: [source.topic] },
        sink: { topic: source.topic.replace(/^raw\./, 'clean.') === source.topic ? `${source.topic}.clean` : source.topic.replace(/^raw\./, 'clean.') },
        deadLetterTopic: `${source.topic}.dlq`,
        format: source.format ?? 'json',
        fields: fields.filter((f) => f.path !== KEY_PATH),
        ...(key ? { key: { field: key.field } } : {}),
        roles: ['ingest'],
        rightsEvidences: { Role: 'ingest' },
        processingEvidences: { Action: 'Protect' },
      },
    };
  }
  return { yaml: stringify(draft), fields };
}
