import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { ResponderRestarts } from '../../../src/stream/unprotect/index.ts';

const silent = pino({ level: 'silent' });

/** a responder whose start fails `failures` times, then runs */
function responder(groupId: string, failures: number) {
  let left = failures;
  let started!: () => void;
  const running = new Promise<void>((resolve) => (started = resolve));
  return {
    groupId,
    starts: 0,
    running,
    async start() {
      this.starts++;
      if (left-- > 0) throw new Error('no coordinator');
      started();
    },
  };
}

describe('ResponderRestarts', () => {
  it('disconnects the dead consumer and starts the responder again until it runs', async () => {
    const r = responder('g1', 2);
    const restarts = new ResponderRestarts([r], silent, 1);
    restarts.active = true;
    let disconnected = 0;
    restarts.restart('g1', { disconnect: async () => void disconnected++ });
    await r.running;
    expect(r.starts).toBe(3);
    expect(disconnected).toBe(1);
  });

  it('does nothing while the process is not running, for an unknown group, or while a restart of the group is under way', async () => {
    const r = responder('g1', 1);
    const restarts = new ResponderRestarts([r], silent, 1);
    const dead = { disconnect: async () => undefined };
    restarts.restart('g1', dead);
    expect(r.starts).toBe(0);
    restarts.active = true;
    restarts.restart('other', dead);
    restarts.restart('g1', dead);
    restarts.restart('g1', dead);
    await r.running;
    expect(r.starts).toBe(2);
  });
});
