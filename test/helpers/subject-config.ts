import { randomUUID } from 'node:crypto';

/**
 * The configuration the data-subject tests share (issue 29): Person.email (AES-SIV) and
 * Person.name (AES-GCM) under keys scoped to the data subject, Person.city under a shared key.
 * `ingest` may protect; `desk` and `support` protect and unprotect. `returning` is
 * subjects.returning; `extra` adds top-level sections (pipelines, responders, service).
 */
export function personConfig(options: { returning?: 'new-key' | 'refuse'; extra?: string } = {}): string {
  return `
version: 1
subjects: { returning: ${options.returning ?? 'new-key'} }
keys:
  person-siv: { type: aes-siv, scope: subject }
  person-gcm: { type: aes-gcm, scope: subject }
  shared-gcm: { type: aes-gcm }
sequences:
  email: { steps: [{ type: aes-siv, key: person-siv }] }
  name: { steps: [{ type: aes-gcm, key: person-gcm }] }
  city: { steps: [{ type: aes-gcm, key: shared-gcm }] }
classes:
  Person:
    properties:
      email: { protect: email }
      name: { protect: name }
      city: { protect: city }
rightsContexts:
  ingest: { evidences: { Role: ingest }, grants: [{ actions: [Protect], fields: ['Person.*'] }] }
  desk: { evidences: { Role: desk }, grants: [{ actions: [Protect, Unprotect], fields: ['Person.*'] }] }
  support: { evidences: { Role: support }, grants: [{ actions: [Protect, Unprotect], fields: ['Person.*'] }] }
processingContexts:
  protect: { evidences: { Action: Protect } }
  unprotect: { evidences: { Action: Unprotect } }
${options.extra ?? ''}`;
}

/** A /transform body of one request per subject, each naming its subject (a Subject evidence); `undefined`: none named. */
export function subjectCall(action: string, items: readonly { subject: string | undefined; values: readonly (readonly [string, string])[] }[], role = 'desk') {
  const rights = randomUUID();
  const contexts = items.map(() => randomUUID());
  return {
    rightsContexts: [{ guid: rights, evidences: [{ name: 'Role', value: role }] }],
    processingContexts: items.map((it, i) => ({
      guid: contexts[i]!,
      evidences: [{ name: 'Action', value: action }, ...(it.subject === undefined ? [] : [{ name: 'Subject', value: it.subject }])],
    })),
    requests: items.map((it, i) => ({
      guid: randomUUID(),
      rightsContext: rights,
      processingContext: contexts[i]!,
      instances: it.values.map(([p, value]) => ({ className: 'Person', propertyName: p, value })),
    })),
  };
}
