import { describe, expect, it } from 'vitest';
import { VeilClientError } from '../../src/client/index.ts';
import { fakeVeilClient, problem, protectedOf } from './fake-veil.ts';

const FIELDS = { email: 'Customer.email', 'address.zip': 'Customer.zip', name: 'Customer.name' } as const;

function setup() {
  return fakeVeilClient({ role: 'fraud' });
}

describe('protectFields / unprotectFields', () => {
  it('protects the mapped fields of one object, nested ones too, and leaves the rest as it was', async () => {
    const { client, fake } = setup();
    const tags = ['a'];
    const input = { id: 7, email: 'alice@example.com', address: { zip: '10115', city: 'Berlin' }, name: null, tags };
    const out = await client.protectFields(FIELDS, input);
    expect(out).toEqual({ id: 7, email: protectedOf('alice@example.com'), address: { zip: protectedOf('10115'), city: 'Berlin' }, name: null, tags });
    expect(out.tags).toBe(tags);
    // the input is untouched
    expect(input).toEqual({ id: 7, email: 'alice@example.com', address: { zip: '10115', city: 'Berlin' }, name: null, tags: ['a'] });
    expect(fake.transformCalls()).toHaveLength(1);
    const sent = JSON.parse(fake.transformCalls()[0]!.body).requests[0].instances;
    expect(sent).toEqual([
      { className: 'Customer', propertyName: 'email', value: 'alice@example.com' },
      { className: 'Customer', propertyName: 'zip', value: '10115' },
    ]);
    expect(await client.unprotectFields(FIELDS, out)).toEqual(input);
  });

  it('does a list of objects in one call, whatever its length, and keeps absent fields absent', async () => {
    const { client, fake } = setup();
    const people = Array.from({ length: 300 }, (_, i) => (i % 3 === 0 ? { id: i } : { id: i, email: `p${i}@example.com` }));
    const out = await client.protectFields(FIELDS, people);
    expect(fake.transformCalls()).toHaveLength(1);
    expect(out).toHaveLength(300);
    expect(out[0]).toEqual({ id: 0 });
    expect('email' in out[0]!).toBe(false);
    expect(out[1]).toEqual({ id: 1, email: protectedOf('p1@example.com') });
    expect(await client.unprotectFields(FIELDS, out)).toEqual(people);
    expect(await client.protectFields(FIELDS, [])).toEqual([]);
    expect(fake.transformCalls()).toHaveLength(2);
  });

  it('refuses a mapped field that is not a string, pointing at it, without its value', async () => {
    const { client, fake } = setup();
    const error = (await client.protectFields(FIELDS, [{ email: 'a@b.c' }, { email: 123456789 }]).catch((e: unknown) => e)) as VeilClientError;
    expect(error).toBeInstanceOf(VeilClientError);
    expect(error).toMatchObject({ code: 'FIELD_NOT_STRING', pointer: '/1/email', retriable: false });
    expect(error.message).not.toContain('123456789');
    expect(fake.transformCalls()).toHaveLength(0);
  });

  it("points a service error at the caller's field: /<index>/<path>", async () => {
    const { client, fake } = setup();
    await client.protect([]);
    fake.script(
      '/transform',
      problem(403, 'ACTION_NOT_GRANTED', {
        pointer: '/requests/0/instances/2',
        errors: [{ code: 'ACTION_NOT_GRANTED', pointer: '/requests/0/instances/2', message: 'not granted', className: 'Customer', propertyName: 'zip' }],
      }),
    );
    const rows = [{ email: 'x@y.z' }, { email: 'secret@example.com', address: { zip: '99999' } }];
    const error = (await client.unprotectFields(FIELDS, rows).catch((e: unknown) => e)) as VeilClientError;
    expect(error).toMatchObject({ code: 'ACTION_NOT_GRANTED', status: 403, pointer: '/1/address/zip' });
    expect(error.details[0]!.pointer).toBe('/1/address/zip');
    expect(error.message).toContain('/1/address/zip');
    for (const value of ['secret@example.com', '99999', 'x@y.z']) expect(JSON.stringify(error) + error.message).not.toContain(value);
  });

  it('refuses a malformed field map', async () => {
    const { client } = setup();
    const maps: Record<string, string>[] = [{ email: 'email' }, { email: 'Customer.' }, { 'a..b': 'Customer.email' }, { email: 'A.b.c' }];
    for (const map of maps) {
      await expect(client.protectFields(map, { email: 'x' })).rejects.toMatchObject({ code: 'FIELD_MAP_INVALID' });
    }
  });
});
