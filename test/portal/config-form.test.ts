import { describe, expect, it } from 'vitest';
import { compileVeilConfigText } from '../../src/app/config-file.ts';
import { applyConfigForm, renderConfigForm } from '../../src/portal/config-form.ts';
import { EXAMPLE_CONFIG_TEXT } from '../helpers/engine-fixture.ts';

const changedLines = (a: string, b: string) => {
  const x = a.split('\n');
  const y = b.split('\n');
  expect(y).toHaveLength(x.length);
  return x.flatMap((line, i) => (line === y[i] ? [] : [[line, y[i]]]));
};

describe('configuration form', () => {
  it('edits only the values that changed, keeping comments and layout byte for byte', () => {
    const out = applyConfigForm(EXAMPLE_CONFIG_TEXT, [
      ['f:/sequences/card-mask/steps/0/char', '#'],
      ['f:/sequences/card-mask/steps/0/keepLast', '5'],
      ['l:/rightsContexts/support/grants/0/actions', 'Protect, Unprotect, Mask'],
      ['f:/keys/pan-ff1/version', '1'],
      ['_csrf', 'ignored'],
    ]);
    expect(changedLines(EXAMPLE_CONFIG_TEXT, out)).toEqual([
      ["      - { type: mask, keepLast: 4, char: '*', preserve: '- ' }", "      - { type: mask, keepLast: 5, char: '#', preserve: '- ' }"],
      ['      - { actions: [Protect, Unprotect], fields: [Customer.email] }', '      - { actions: [Protect, Unprotect, Mask], fields: [Customer.email] }'],
    ]);
    expect(compileVeilConfigText(out).config?.engine.sequences.get('card-mask')?.steps[0]).toMatchObject({ char: '#', keepLast: 5 });
  });

  it('leaves the text untouched when nothing changed, and ignores paths outside the form sections or absent', () => {
    expect(
      applyConfigForm(EXAMPLE_CONFIG_TEXT, [
        ['f:/version', '2'],
        ['f:/identity/audience', 'x'],
        ['f:/keys/nope/type', 'aes-gcm'],
        ['f:/keys/customer-siv/type', 'aes-siv'],
      ]),
    ).toBe(EXAMPLE_CONFIG_TEXT);
  });

  it('quotes a value that would not read back as the same text', () => {
    const out = applyConfigForm(EXAMPLE_CONFIG_TEXT, [['f:/sequences/email-deterministic/description', 'a: b # c']]);
    expect(out).toContain('description: "a: b # c"');
    expect(compileVeilConfigText(out).config?.engine).toBeDefined();
  });

  it('writes a non-number into a number field as text, so validation names the field', () => {
    const out = applyConfigForm(EXAMPLE_CONFIG_TEXT, [['f:/sequences/card-fpe/steps/0/keepFirst', 'six']]);
    const issues = compileVeilConfigText(out).issues;
    expect(issues.map((i) => i.pointer)).toContain('/sequences/card-fpe/steps/0/keepFirst');
  });

  it('renders a labelled input per value and places each issue at its field or nearest fieldset', () => {
    const { form, unplaced } = renderConfigForm(EXAMPLE_CONFIG_TEXT, [
      { severity: 'error', pointer: '/sequences/card-mask/steps/0/keepLast', message: 'too big' },
      { severity: 'error', pointer: '/classes/Customer/properties/email/unprotect', message: 'missing thing' },
      { severity: 'error', pointer: '/identity/clients', message: 'not in the form' },
    ]);
    expect(form.text).toMatch(
      /<label for="f-[A-Za-z0-9_-]+">keepLast<\/label><input type="text" id="f-[A-Za-z0-9_-]+" name="f:\/sequences\/card-mask\/steps\/0\/keepLast" value="4" aria-describedby="e-/,
    );
    expect(form.text).toContain('<li>/classes/Customer/properties/email/unprotect: missing thing</li>');
    expect(unplaced.map((i) => i.message)).toEqual(['not in the form']);
  });

  it('escapes names and values', () => {
    const text = EXAMPLE_CONFIG_TEXT.replace('classes:\n', 'classes:\n  "<img src=x onerror=alert(1)>":\n    properties: { p: { protect: "\\"><script>" } }\n');
    const { form } = renderConfigForm(text, []);
    expect(form.text).not.toContain('<img');
    expect(form.text).not.toContain('<script>');
    expect(form.text).toContain('&lt;img src=x onerror=alert(1)&gt;');
  });
});
