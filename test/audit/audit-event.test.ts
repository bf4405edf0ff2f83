import { describe, expect, it } from 'vitest';
import { fieldCounts } from '../../src/audit/audit-event.ts';
import type { Plan } from '../../src/engine/index.ts';

const plan = (requests: { action: string; fields: string[] }[]): Plan => ({
  requests: requests.map((r, index) => ({
    guid: `g${index}`,
    index,
    action: r.action,
    reveals: false,
    processingContext: 'p',
    rightsContexts: ['r'],
    chains: [],
    instances: r.fields.map((f) => ({ className: f.split('.')[0]!, propertyName: f.split('.')[1]!, value: 'v' })),
  })),
});

describe('fieldCounts', () => {
  it('counts each field per action, runs and interleavings alike, in first-seen order', () => {
    expect(
      fieldCounts(
        plan([
          { action: 'Protect', fields: ['Customer.email', 'Customer.email', 'Customer.name', 'Customer.email', 'Order.email', 'Customer.name'] },
          { action: 'Unprotect', fields: ['Customer.email'] },
          { action: 'Protect', fields: ['Customer.name', 'Customer.name'] },
        ]),
      ),
    ).toEqual([
      { className: 'Customer', propertyName: 'email', action: 'Protect', count: 3 },
      { className: 'Customer', propertyName: 'name', action: 'Protect', count: 4 },
      { className: 'Order', propertyName: 'email', action: 'Protect', count: 1 },
      { className: 'Customer', propertyName: 'email', action: 'Unprotect', count: 1 },
    ]);
    expect(fieldCounts(plan([]))).toEqual([]);
  });
});
