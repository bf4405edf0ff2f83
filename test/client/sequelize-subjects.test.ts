import { describe, expect, it } from 'vitest';
import type { Model, ModelStatic } from 'sequelize';
import { protectModel } from '../../src/client/sequelize.ts';
import { fakeVeilClient, protectedOf } from './fake-veil.ts';

/**
 * protectModel with a subject attribute (keys scoped to the data subject): the hooks send each
 * row's values in a request naming the row's subject. Driven as Sequelize drives its hooks, over
 * the scripted veil (the hooks against real Sequelize and PostgreSQL: test/integration/client/app-layer.test.ts).
 */
function setup() {
  const { fake, client } = fakeVeilClient();
  const hooks = new Map<string, (...args: unknown[]) => unknown>();
  const model = { addHook: (name: string, _id: string, fn: (...args: unknown[]) => unknown) => hooks.set(name, fn) } as unknown as ModelStatic<Model>;
  protectModel(model, client, { class: 'Customer', fields: { email: 'email' }, subject: 'customerId' });
  const subjectsSent = () =>
    fake.transformCalls().map((c) => {
      const body = JSON.parse(c.body) as {
        processingContexts: { guid: string; evidences: { name: string; value: string }[] }[];
        requests: { processingContext: string; instances: unknown[] }[];
      };
      return body.requests.map((r) => [
        body.processingContexts.find((p) => p.guid === r.processingContext)!.evidences.find((e) => e.name === 'Subject')?.value,
        r.instances.length,
      ]);
    });
  return { hooks, subjectsSent };
}

const row = (customerId: unknown, email: string) => ({ dataValues: { customerId, email }, _previousDataValues: {}, changed: () => ['email'] });

describe('protectModel with a subject attribute', () => {
  it('bulkCreate and find: one call each, one request per row subject (numbers as text); values back in row order', async () => {
    const { hooks, subjectsSent } = setup();
    const rows = [row(7, 'a@example.com'), row('c-8', 'b@example.com'), row(7, 'c@example.com')];
    await hooks.get('beforeBulkCreate')!(rows, {});
    expect(rows.map((r) => r.dataValues.email)).toEqual(['a@example.com', 'b@example.com', 'c@example.com'].map(protectedOf));
    const found = [
      { customerId: 7, email: protectedOf('a@example.com') },
      { customerId: 'c-8', email: protectedOf('b@example.com') },
    ];
    await hooks.get('afterFind')!(found);
    expect(found.map((r) => r.email)).toEqual(['a@example.com', 'b@example.com']);
    expect(subjectsSent()).toEqual([
      [
        ['7', 2],
        ['c-8', 1],
      ],
      [
        ['7', 1],
        ['c-8', 1],
      ],
    ]);
  });

  it('a row without its subject goes in a request naming none (the service refuses a scoped field: SUBJECT_REQUIRED)', async () => {
    const { hooks, subjectsSent } = setup();
    await hooks.get('beforeCreate')!(row(null, 'a@example.com'), {});
    expect(subjectsSent()).toEqual([[[undefined, 1]]]);
  });
});
