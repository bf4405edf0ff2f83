import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clearCustomers, customersTable, veilDb, type VeilDb } from '../../helpers/db-security.ts';

/**
 * Attack/bug: INSERT ... ON CONFLICT DO UPDATE SET c = EXCLUDED.c stored c protected twice
 * (EXCLUDED.c is the value the INSERT trigger protected; the UPDATE trigger protected it again).
 * Each value must be stored protected exactly once — unprotect gives the cleartext back — while a
 * caller still cannot store a cleartext of its own by making it look protected. Real PostgreSQL
 * 15, real `veil serve`.
 */
let t: VeilDb<'writer' | 'reader'>;
const PROTECTED = /^[A-Za-z0-9_-]{30,}$/;

/** What the reader gets back from each stored value, by id. */
const clear = (ids: number[]) => clearCustomers(t, ids);
const stored = (id: number) => t.on(`SELECT email, name FROM customers WHERE id = ${id}`).then((l) => l[0]!.split('|'));

beforeAll(async () => {
  t = await veilDb('upsert', ['writer', 'reader']);
  await t.on(customersTable(t));
  await t.on(`INSERT INTO customers (id, email, name) VALUES (1, 'old1@example.com', 'Old One'), (2, 'old2@example.com', 'Old Two');`, t.role.writer);
}, 120_000);

afterAll(async () => {
  await t?.close();
});

describe('an upsert stores each value protected once', () => {
  it('ON CONFLICT DO UPDATE SET c = EXCLUDED.c, for conflicting and new rows in one statement', async () => {
    await t.on(
      `INSERT INTO customers (id, email, name) VALUES
        (1, 'new1@example.com', 'New One'), (2, 'new2@example.com', NULL), (3, 'fresh3@example.com', 'Fresh Three')
      ON CONFLICT (id) DO UPDATE SET email = EXCLUDED.email, name = EXCLUDED.name, visits = customers.visits + 1;`,
      t.role.writer,
    );
    expect(await clear([1, 2, 3])).toEqual(['1|new1@example.com|New One', '2|new2@example.com|', '3|fresh3@example.com|Fresh Three']);
    expect(await t.on('SELECT id, visits FROM customers WHERE id <= 3 ORDER BY id')).toEqual(['1|1', '2|1', '3|0']);
    // AES-SIV is deterministic for Customer.email: the stored value is exactly one protection
    expect(await t.on(`SELECT email = veil.protect('Customer', 'email', 'new1@example.com') FROM customers WHERE id = 1`)).toEqual(['t']);
    // one veil call per proposed row, none for the UPDATE part
    const calls = (await t.audit(t.role.writer)).slice(2);
    expect(calls.map((c) => [c.function, c.instances, c.outcome])).toEqual([
      ['trigger', 2, 'ok'],
      ['trigger', 1, 'ok'],
      ['trigger', 2, 'ok'],
    ]);
  });

  it('an upsert that sets a new cleartext, or keeps a column, protects it once too', async () => {
    const [, nameBefore] = await stored(1);
    await t.on(
      `INSERT INTO customers (id, email, name) VALUES (1, 'ignored@example.com', 'Ignored')
      ON CONFLICT (id) DO UPDATE SET email = 'set-in-update@example.com';`,
      t.role.writer,
    );
    expect(await clear([1])).toEqual(['1|set-in-update@example.com|New One']);
    expect((await stored(1))[1]).toBe(nameBefore);
    // DO UPDATE SET email = EXCLUDED.email || '' is a value the INSERT trigger did not produce for
    // this row: it is protected, once more than EXCLUDED.email, and unprotects to that
    await t.on(
      `INSERT INTO customers (id, email) VALUES (1, 'concat@example.com') ON CONFLICT (id) DO UPDATE SET email = 'x' || EXCLUDED.email;`,
      t.role.writer,
    );
    const [doubled] = await stored(1);
    const inner = (await t.on(`SELECT veil.unprotect('Customer', 'email', '${doubled}')`, t.role.reader))[0]!.slice(1);
    expect(await t.on(`SELECT veil.unprotect('Customer', 'email', '${inner}')`, t.role.reader)).toEqual(['concat@example.com']);
  });

  it('a plain UPDATE with a new cleartext is protected, also when it looks like a protected value', async () => {
    await t.on(`UPDATE customers SET email = 'updated3@example.com' WHERE id = 3;`, t.role.writer);
    expect(await clear([3])).toEqual(['3|updated3@example.com|Fresh Three']);
    // a caller copies row 2's protected email into row 3, and passes off a made-up "protected" name
    const [email2] = await stored(2);
    const lookalike = 'AbCdEfGhIjKlMnOpQrStUvWxYz0123456789_-AbCd';
    await t.on(`UPDATE customers SET email = '${email2}', name = '${lookalike}' WHERE id = 3;`, t.role.writer);
    const [email3, name3] = await stored(3);
    expect(email3).not.toBe(email2);
    expect(name3).not.toBe(lookalike);
    expect(name3).toMatch(PROTECTED);
    expect(await clear([3])).toEqual([`3|${email2}|${lookalike}`]);
  });

  it('an upsert cannot smuggle a cleartext through the UPDATE part either', async () => {
    // EXCLUDED.name is the INSERT trigger's protected name; SET email = EXCLUDED.name puts it in
    // another column: it is protected there as an email, not stored as it is
    await t.on(
      `INSERT INTO customers (id, email, name) VALUES (2, 'e@example.com', 'Smuggled Name')
      ON CONFLICT (id) DO UPDATE SET email = EXCLUDED.name, name = 'Plain Cleartext';`,
      t.role.writer,
    );
    const [email, name] = await stored(2);
    expect(name).toMatch(PROTECTED);
    expect(await t.on(`SELECT veil.unprotect('Customer', 'name', name) FROM customers WHERE id = 2`, t.role.reader)).toEqual(['Plain Cleartext']);
    const protectedName = (await t.on(`SELECT veil.unprotect('Customer', 'email', '${email}')`, t.role.reader))[0]!;
    expect(protectedName).toMatch(PROTECTED);
    expect(await t.on(`SELECT veil.unprotect('Customer', 'name', '${protectedName}')`, t.role.reader)).toEqual(['Smuggled Name']);
    expect((await t.on("SELECT string_agg(email || name, ',') FROM customers"))[0]).not.toMatch(/@example\.com|Cleartext|Smuggled/);
  });
});
