import { randomBytes } from 'node:crypto';
import { stat } from 'node:fs/promises';
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pgServerGid, readSecret, startVeil, type VeilProcess } from '../../helpers/postgres.ts';
import { authFrame, parseReply, protectFrame, type Reply } from '../../helpers/db-client-frames.ts';

/** A raw client of veil's database socket: frames in, replies (or the close) out. */
interface Raw {
  socket: Socket;
  send(bytes: Buffer): void;
  /** the next reply, or 'closed' once veil closed the connection */
  next(): Promise<Reply | 'closed'>;
}

function raw(path: string): Promise<Raw> {
  const socket = connect(path);
  let buffer = Buffer.alloc(0);
  let closed = false;
  const waiting: ((r: Reply | 'closed') => void)[] = [];
  const ready: (Reply | 'closed')[] = [];
  const push = (r: Reply | 'closed') => (waiting.length ? waiting.shift()!(r) : ready.push(r));
  socket.on('data', (d: Buffer) => {
    buffer = Buffer.concat([buffer, d]);
    while (buffer.length >= 4 && buffer.length >= 4 + buffer.readUInt32BE(0)) {
      const n = buffer.readUInt32BE(0);
      push(parseReply(buffer.subarray(4, 4 + n)));
      buffer = buffer.subarray(4 + n);
    }
  });
  socket.on('error', () => undefined);
  socket.on('close', () => {
    closed = true;
    push('closed');
  });
  return new Promise((resolve, reject) => {
    socket.once('error', reject);
    socket.once('connect', () =>
      resolve({
        socket,
        send: (bytes) => {
          if (!closed) socket.write(bytes);
        },
        next: () => new Promise((r) => (ready.length ? r(ready.shift()!) : waiting.push(r))),
      }),
    );
  });
}

const SECRET = 'ada-9f3c@example.com';
const items = [
  { className: 'Customer', propertyName: 'email', value: SECRET },
  { className: 'Customer', propertyName: 'name', value: 'Ada Secret-9f3c' },
];
const codeOf = (r: Reply | 'closed') => (r === 'closed' ? 'closed' : r.kind === 'error' ? r.code : r.kind);
const text = (r: Reply | 'closed') => JSON.stringify(r);

describe("veil's database socket refuses what is not a well-formed, authenticated call", () => {
  let veil: VeilProcess;
  let token: string;
  let path: string;

  beforeAll(async () => {
    veil = await startVeil({ socket: true, env: { VEIL_DB_SOCKET_FRAME_TIMEOUT_MS: '300', VEIL_DB_SOCKET_AUTH_TIMEOUT_MS: '600' } });
    path = veil.socketPath!;
    const response = await fetch(`${veil.url}/connect/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'client_credentials', client_id: 'veil-dev', client_secret: await readSecret(veil) }),
    });
    token = ((await response.json()) as { access_token: string }).access_token;
  }, 60_000);
  afterAll(() => veil?.close());

  it("the socket file is the owner's and the database server's group's only (0660)", async () => {
    const s = await stat(path);
    expect(s.isSocket()).toBe(true);
    expect(s.mode & 0o777).toBe(0o660);
    expect(s.gid).toBe(await pgServerGid());
  });

  it('no token: PROTECT is refused with TOKEN_MISSING; after AUTH the same connection protects', async () => {
    const c = await raw(path);
    c.send(protectFrame('app', 'ingest', items));
    const refused = await c.next();
    expect(codeOf(refused)).toBe('TOKEN_MISSING');
    expect(refused).toMatchObject({ status: 401 });
    c.send(authFrame(token));
    expect(codeOf(await c.next())).toBe('auth-ok');
    c.send(protectFrame('app', 'ingest', items));
    const ok = await c.next();
    expect(codeOf(ok)).toBe('values');
    expect((ok as { values: string[] }).values).toHaveLength(2);
    expect(text(ok)).not.toContain('ada-9f3c');
    c.socket.destroy();
  });

  it('a forged or garbled token: TOKEN_INVALID, and the connection is closed', async () => {
    for (const bad of ['not-a-token', `${token.slice(0, -4)}AAAA`]) {
      const c = await raw(path);
      c.send(authFrame(bad));
      expect(codeOf(await c.next())).toBe('TOKEN_INVALID');
      expect(await c.next()).toBe('closed');
    }
  });

  it('a connection that does not authenticate in time is closed', async () => {
    const c = await raw(path);
    expect(codeOf(await c.next())).toBe('TOKEN_MISSING');
    expect(await c.next()).toBe('closed');
  });

  it('a veil role the client does not hold: 403, no value, and the connection stays usable', async () => {
    const c = await raw(path);
    c.send(authFrame(token));
    await c.next();
    c.send(protectFrame('app', 'no-such-role', items));
    const refused = await c.next();
    expect(refused).toMatchObject({ kind: 'error', status: 403 });
    expect(text(refused)).not.toContain('ada-9f3c');
    c.send(protectFrame('app', 'ingest', items));
    expect(codeOf(await c.next())).toBe('values');
    c.socket.destroy();
  });

  it('an oversized frame is refused on its header (BODY_TOO_LARGE), before its body is read', async () => {
    const c = await raw(path);
    c.send(Buffer.from([0x10, 0, 0, 0]));
    const refused = await c.next();
    expect(codeOf(refused)).toBe('BODY_TOO_LARGE');
    expect(await c.next()).toBe('closed');
  });

  it('a truncated frame times out (REQUEST_TIMEOUT); one whose grammar ends early is REQUEST_MALFORMED', async () => {
    const c = await raw(path);
    c.send(authFrame(token));
    await c.next();
    c.send(protectFrame('app', 'ingest', items).subarray(0, 20));
    expect(codeOf(await c.next())).toBe('REQUEST_TIMEOUT');
    expect(await c.next()).toBe('closed');

    const d = await raw(path);
    d.send(authFrame(token));
    await d.next();
    const whole = protectFrame('app', 'ingest', items);
    const short = Buffer.from(whole.subarray(0, whole.length - 5));
    short.writeUInt32BE(short.length - 4, 0);
    d.send(short);
    const refused = await d.next();
    expect(codeOf(refused)).toBe('REQUEST_MALFORMED');
    expect(text(refused)).toMatch(/malformed frame: the frame ends inside a value/);
    expect(text(refused)).not.toContain('ada');
    expect(await d.next()).toBe('closed');
  });

  it('garbage gets one error frame and the close, and never a value', async () => {
    for (let i = 0; i < 20; i++) {
      const c = await raw(path);
      const junk = randomBytes(64 + i * 50);
      if (i % 2 === 0) junk.writeUInt32BE(junk.length - 4, 0); // a plausible length, garbage payload
      c.send(junk);
      const reply = await c.next();
      expect(['REQUEST_MALFORMED', 'BODY_TOO_LARGE', 'REQUEST_TIMEOUT', 'closed']).toContain(codeOf(reply));
      if (reply !== 'closed') expect(await c.next()).toBe('closed');
    }
  });

  it('a flood of pipelined frames is answered one by one, in order, within the rate limit; other connections keep being served', async () => {
    const c = await raw(path);
    c.send(authFrame(token));
    await c.next();
    const frame = protectFrame('app', 'ingest', items);
    c.send(Buffer.concat(Array.from({ length: 3000 }, () => frame)));
    const junk = await Promise.all(Array.from({ length: 30 }, () => raw(path)));
    for (const j of junk) j.send(Buffer.from([0, 0, 0, 1, 0x7f]));
    const codes = new Map<string, number>();
    for (let i = 0; i < 3000; i++) {
      const code = codeOf(await c.next());
      codes.set(code, (codes.get(code) ?? 0) + 1);
    }
    // the example configuration's rate limit (burst 1000) answers the rest RATE_LIMITED, never a close
    expect([...codes.keys()].every((k) => k === 'values' || k === 'RATE_LIMITED')).toBe(true);
    expect(codes.get('values')).toBeGreaterThanOrEqual(1000);
    for (const j of junk) expect(codeOf(await j.next())).toBe('REQUEST_MALFORMED');
    c.socket.destroy();
  }, 60_000);
});
