import { describe, expect, it } from 'vitest';
import { compileVeilConfigText } from '../../src/app/config-file.ts';
import { Profiler } from '../../src/discover/profile.ts';
import { classNameFor, propose } from '../../src/discover/propose.ts';
import { DEMO_PEOPLE, demoRecord } from '../helpers/demo-records.ts';

describe('propose: a configuration draft from findings', () => {
  it("on the demo's raw topic: a valid draft whose pipeline protects what config/example-pipeline.yaml protects", () => {
    const p = new Profiler();
    for (let i = 0; i < 30; i++) p.add(demoRecord(i), DEMO_PEOPLE[i % 3]![1]);
    const proposal = propose(p.findings(), { topic: 'raw.customers' });
    const compiled = compileVeilConfigText(proposal.yaml);
    expect(compiled.issues.filter((i) => i.severity === 'error')).toEqual([]);
    const pipeline = compiled.config!.pipelines.customers!;
    expect(pipeline.fields.map((f) => f.path).sort()).toEqual(['cards[].number', 'email', 'profile.name']);
    expect(pipeline.key?.field).toBe('Customer.email');
    expect(pipeline.fields.map((f) => f.field).sort()).toEqual(['Customer.cardNumber', 'Customer.email', 'Customer.name']);
    expect(pipeline.source).toEqual({ topics: ['raw.customers'] });
    expect(pipeline.sink).toEqual({ topic: 'clean.customers' });
    // the sequences the issue asks for: card → FF1 keeping BIN and last 4, email → AES-SIV, name → AES-GCM
    expect(proposal.yaml).toMatch(/card-fpe:\n\s+steps:\n\s+- type: ff1\n\s+key: discovered-ff1\n\s+alphabet: digits\n\s+keepFirst: 2\n\s+keepLast: 4/);
    expect(proposal.yaml).toContain('type: aes-siv');
    expect(proposal.yaml).toContain('type: aes-gcm');
    // no sampled value in the draft
    for (const [name, email, card] of DEMO_PEOPLE) for (const v of [name, email, card]) expect(proposal.yaml).not.toContain(v);
  });

  it('names the class after the source, and a draft without a topic has no pipeline', () => {
    expect(classNameFor('raw.customers')).toBe('Customer');
    expect(classNameFor('crm.address')).toBe('Address');
    // version and run suffixes are not names
    expect(classNameFor('raw.customers.v2')).toBe('Customer');
    expect(classNameFor('raw.customers.bf00fdf2')).toBe('Customer');
    expect(classNameFor('raw.customers.0a1b2c3d')).toBe('Customer');
    expect(classNameFor(undefined)).toBe('Record');
    const p = new Profiler();
    for (let i = 0; i < 5; i++) p.add({ contact: { email: `a${i}@example.com` }, billing: { email: `b${i}@example.com` } });
    const proposal = propose(p.findings());
    const compiled = compileVeilConfigText(proposal.yaml);
    expect(compiled.issues.filter((i) => i.severity === 'error')).toEqual([]);
    expect(compiled.config!.pipelines).toEqual({});
    expect(proposal.fields).toEqual([
      { path: 'billing.email', field: 'Record.email' },
      { path: 'contact.email', field: 'Record.email' },
    ]);
  });
});

describe('mergeProposal: a proposal into an existing configuration', () => {
  it("keeps what the configuration has and adds what it lacks; the demo configuration plus the demo topic's proposal validates", async () => {
    const { readFile } = await import('node:fs/promises');
    const { mergeProposal } = await import('../../src/discover/merge-draft.ts');
    const existing = await readFile(new URL('../../config/example.yaml', import.meta.url), 'utf8');
    const p = new Profiler();
    for (let i = 0; i < 30; i++) p.add({ ...demoRecord(i), contact: { phone: '+44 20 7946 0958' } }, DEMO_PEOPLE[i % 3]![1]);
    const merged = mergeProposal(existing, propose(p.findings(), { topic: 'raw.customers' }).yaml);
    const compiled = compileVeilConfigText(merged);
    expect(compiled.issues.filter((i) => i.severity === 'error')).toEqual([]);
    const config = compiled.config!;
    // the existing sequences and properties are kept; the class gains the property it lacked
    expect(merged).toContain('# veil demo configuration');
    expect(config.engine.classes.get('Customer')!.get('email')!.actions.get('Protect')!.sequence).toBe('email-deterministic');
    expect(config.engine.classes.get('Customer')!.has('phone')).toBe(true);
    expect(config.engine.classes.get('Customer')!.has('segmentKey')).toBe(true);
    expect(config.pipelines.customers!.fields.map((f) => f.path).sort()).toEqual(['cards[].number', 'contact.phone', 'email', 'profile.name']);
    // merged twice: the pipeline name is taken, so the second one is added beside it
    const twice = compileVeilConfigText(mergeProposal(merged, propose(p.findings(), { topic: 'raw.customers' }).yaml));
    expect(Object.keys(twice.config!.pipelines).sort()).toEqual(['customers', 'customers-discovered']);
  });
});
