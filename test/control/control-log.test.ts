import { describe, expect, it } from 'vitest';
import { ControlState, parseWrite, recordKey, type ControlWrite } from '../../src/control/index.ts';

const write = (history: 'config' | 'keyset', basedOn: number, writer: string, body = `${writer}@${basedOn}`): ControlWrite => ({
  v: 1,
  history,
  basedOn,
  writer,
  at: '2026-11-26T00:00:00.000Z',
  body,
});

describe('ControlState: the log resolved the same way by every reader', () => {
  it('accepts a write on the current head, ignores one on a stale head, per history', () => {
    const s = new ControlState();
    expect(s.apply(write('config', 0, 'a'))).toMatchObject({ number: 1 });
    expect(s.apply(write('config', 0, 'b'))).toBeUndefined();
    expect(s.apply(write('keyset', 0, 'b'))).toMatchObject({ number: 1 });
    expect(s.apply(write('config', 1, 'b'))).toMatchObject({ number: 2 });
    expect(s.apply(write('config', 5, 'c'))).toBeUndefined();
    expect([s.head('config'), s.head('keyset')]).toEqual([2, 1]);
    expect(s.configs.map((c) => c.write.body)).toEqual(['a@0', 'b@1']);
    expect(s.wasAccepted(recordKey(write('config', 0, 'a')))).toBeDefined();
    expect(s.wasAccepted(recordKey(write('config', 0, 'b')))).toBeUndefined();
  });

  it('any interleaving of racing writers yields one linear history, and every reader of the same log agrees', () => {
    let seed = 11;
    const rand = () => (seed = (seed * 48271) % 2147483647) / 2147483647;
    for (let round = 0; round < 200; round++) {
      // writers read the head at different moments: the log is what the broker appended, in order
      const log: ControlWrite[] = [];
      const truth = new ControlState();
      for (let i = 0; i < 30; i++) {
        const stale = Math.max(0, truth.head('config') - Math.floor(rand() * 2));
        const w = write('config', stale, `w${Math.floor(rand() * 4)}-${i}`);
        log.push(w);
        truth.apply(w);
      }
      const readers = [new ControlState(), new ControlState()];
      for (const r of readers) for (const w of log) r.apply(w);
      const numbers = readers[0]!.configs.map((c) => c.number);
      expect(numbers).toEqual(numbers.map((_, i) => i + 1));
      expect(readers[1]!.configs.map((c) => c.write.body)).toEqual(readers[0]!.configs.map((c) => c.write.body));
    }
  });

  it('parses only well-formed writes: anything else in the topic is ignored', () => {
    expect(parseWrite(JSON.stringify(write('config', 0, 'a')))).toMatchObject({ history: 'config' });
    for (const bad of [
      null,
      'not json',
      '{}',
      JSON.stringify({ ...write('config', 0, 'a'), v: 2 }),
      JSON.stringify({ ...write('config', 0, 'a'), basedOn: -1 }),
      JSON.stringify({ ...write('config', 0, 'a'), history: 'other' }),
      JSON.stringify({ ...write('config', 0, 'a'), body: 5 }),
    ]) {
      expect(parseWrite(bad)).toBeUndefined();
    }
  });
});
