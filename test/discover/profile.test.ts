import { describe, expect, it } from 'vitest';
import { Profiler } from '../../src/discover/profile.ts';
import { propose } from '../../src/discover/propose.ts';

describe('Profiler: per field path, the kind most of its values are', () => {
  const records = Array.from({ length: 20 }, (_, i) => ({
    id: i,
    customer: { name: `Alice Number${i === 0 ? '' : ''} Martin`, email: `alice${i}@example.com`, phone: '+44 20 7946 0958' },
    cards: [{ number: '4111 1111 1111 1111' }, { number: 5555555555554444 }],
    items: [{ name: 'Ergonomic Steel Chair', sku: `SKU-${i}` }],
    note: i < 15 ? '123-45-6789' : 'n/a',
    createdAt: '1984-02-29',
  }));

  it('reports paths in pipeline terms with counts and a confidence, and not what is not personal', () => {
    const p = new Profiler();
    for (const r of records) p.add(r);
    expect(p.records).toBe(20);
    expect(p.findings().map((f) => [f.path, f.kind, f.values, f.matched, f.confidence])).toEqual([
      ['cards[].number', 'payment-card', 40, 40, 'high'],
      ['customer.email', 'email', 20, 20, 'high'],
      ['customer.name', 'person-name', 20, 20, 'medium'],
      ['customer.phone', 'phone', 20, 20, 'high'],
    ]);
    // 15 of 20 SSNs is below the default share; a lower threshold reports it
    expect(p.findings(0.7).find((f) => f.path === 'note')).toMatchObject({ kind: 'us-ssn', share: 0.75 });
  });

  it('keeps counts only: no sampled value appears in what it reports', () => {
    const p = new Profiler();
    for (const r of records) p.add(r);
    const report = JSON.stringify(p.findings(0));
    for (const value of ['alice0@example.com', '4111', '5555555555554444', 'Martin', '7946', '123-45-6789']) expect(report).not.toContain(value);
  });

  it('masks a map key that may itself be data (not a field name, or a detector accepts it) as *, and the draft leaves such paths out', () => {
    const p = new Profiler();
    for (let i = 0; i < 10; i++) {
      p.add({
        byEmail: { [`user${i}@example.com`]: { card: '4111 1111 1111 1111' } },
        byPhone: { [`+4420794609${50 + i}`]: 'x' },
        byCard: { ['4111111111111111']: { email: `c${i}@example.com` } },
        plain: { email: `p${i}@example.com` },
      });
    }
    const findings = p.findings();
    expect(findings.map((f) => f.path)).toEqual(['byCard.*.email', 'byEmail.*.card', 'plain.email']);
    const all = JSON.stringify([...findings, ...p.findings(0)]);
    for (const value of ['@example.com', '+4420', '4111']) expect(all).not.toContain(value);
    expect(propose(findings, { topic: 'raw.x' }).fields.map((f) => f.path)).toEqual(['plain.email']);
  });
});
