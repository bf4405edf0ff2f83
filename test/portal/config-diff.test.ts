import { describe, expect, it } from 'vitest';
import { lineDiff, restartSections, unreadableWarnings } from '../../src/portal/config-diff.ts';
import { EXAMPLE_CONFIG_TEXT } from '../helpers/engine-fixture.ts';

describe('configuration diff', () => {
  it('diffs lines', () => {
    expect(lineDiff('a\nb\nc', 'a\nx\nc')).toEqual([
      { op: ' ', text: 'a' },
      { op: '-', text: 'b' },
      { op: '+', text: 'x' },
      { op: ' ', text: 'c' },
    ]);
    expect(lineDiff('a', 'a').every((l) => l.op === ' ')).toBe(true);
  });

  it('warns when a reversible property changes its sequence, its steps or its key reference', () => {
    const steps = EXAMPLE_CONFIG_TEXT.replace('keepFirst: 6, keepLast: 4 }', 'keepFirst: 4, keepLast: 4 }');
    expect(unreadableWarnings(EXAMPLE_CONFIG_TEXT, steps)).toEqual([
      'Customer.cardNumber: the steps of sequence card-fpe change: stored values become unreadable',
    ]);
    const sequence = EXAMPLE_CONFIG_TEXT.replace('email: { protect: email-deterministic }', 'email: { protect: name-randomized }');
    expect(unreadableWarnings(EXAMPLE_CONFIG_TEXT, sequence)).toEqual([
      'Customer.email: its protect sequence changes from email-deterministic to name-randomized: stored values become unreadable',
    ]);
    const pinned = EXAMPLE_CONFIG_TEXT.replace('pan-ff1: { type: ff1, version: 1 }', 'pan-ff1: { type: ff1, version: 2 }');
    expect(unreadableWarnings(EXAMPLE_CONFIG_TEXT, pinned)).toEqual([
      'Customer.cardNumber: key reference pan-ff1 changes (id, type or pinned version): stored values become unreadable',
      'Customer.nationalId: key reference pan-ff1 changes (id, type or pinned version): stored values become unreadable',
    ]);
  });

  it('warns when a key reference is removed, and not for changes that keep stored data readable', () => {
    const removed = EXAMPLE_CONFIG_TEXT.replace('  pseudonym: { type: hmac-sha256 }\n', '');
    expect(unreadableWarnings(EXAMPLE_CONFIG_TEXT, removed)).toContain(
      'key reference pseudonym is removed: values protected with it can no longer be unprotected through this configuration',
    );
    const mask = EXAMPLE_CONFIG_TEXT.replace("char: '*'", "char: '#'");
    expect(unreadableWarnings(EXAMPLE_CONFIG_TEXT, mask)).toEqual([]);
  });

  it('names the sections that need a restart', () => {
    expect(restartSections(EXAMPLE_CONFIG_TEXT, `${EXAMPLE_CONFIG_TEXT}\nservice: { limits: { bodyBytes: 2048 } }\n`)).toEqual(['service']);
  });
});
