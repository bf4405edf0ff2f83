import { describe, expect, it } from 'vitest';
import { rewrapPipeline } from '../../../src/stream/protect/rewrap-pipeline.ts';
import type { PipelineConfig } from '../../../src/stream/config/pipeline-config.ts';

const base: PipelineConfig = {
  source: { topics: ['raw'] },
  sink: { topic: 'clean' },
  deadLetterTopic: 'dlq',
  format: 'json',
  fields: [{ path: 'email', field: 'Customer.email' }],
  key: { field: 'Customer.email' },
  missing: 'dead-letter',
  keys: 'insensitive',
  unmapped: 'dead-letter',
  roles: ['ingest'],
  rightsEvidences: { Role: 'ingest' },
  processingEvidences: { Action: 'Protect' },
  validate: true,
  delivery: 'at-least-once',
};
const spec = { to: 'clean.v2', roles: ['fraud'], rightsEvidences: { Role: 'fraud' }, unprotectEvidences: { Action: 'Unprotect' } };

describe('rewrapPipeline', () => {
  it('reads the sink, writes the new topic, keeps fields, key, format and missing; its own identity and group; exactly-once, no validation, no unmapped guard (the clean record passed it)', () => {
    expect(rewrapPipeline('customers', base, spec)).toEqual({
      ...base,
      source: { topics: ['clean'] },
      sink: { topic: 'clean.v2' },
      groupId: 'veil-rewrap-customers',
      roles: ['fraud'],
      rightsEvidences: { Role: 'fraud' },
      validate: false,
      delivery: 'exactly-once',
      unmapped: 'pass',
    });
    expect(rewrapPipeline('customers', base, { ...spec, from: 'clean.old', deadLetterTopic: 'dlq.rewrap', groupId: 'g' })).toMatchObject({
      source: { topics: ['clean.old'] },
      deadLetterTopic: 'dlq.rewrap',
      groupId: 'g',
    });
  });

  it.each([
    ['the topic it reads', { ...spec, to: 'clean' }, base, '--to must differ'],
    ['a renaming sink without --from', spec, { ...base, sink: { rename: { from: '^raw', to: 'clean' } } }, 'renames its sink topics'],
    ['a dead-letter topic it reads or writes', { ...spec, deadLetterTopic: 'clean.v2' }, base, 'dead-letter topic clean.v2'],
  ] as const)('refuses %s (CONFIG_INVALID)', (_, s, b, message) => {
    expect(() => rewrapPipeline('customers', b as PipelineConfig, s)).toThrow(
      expect.objectContaining({ code: 'CONFIG_INVALID', message: expect.stringContaining(message) }),
    );
  });
});
