import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { MemoryAuditSink } from './memory-audit-sink.ts';
import { openService, type Service } from '../../src/app/open-service.ts';
import { EXAMPLE_CONFIG } from '../../src/env/index.ts';

export const MASTER_KEY_HEX = 'a'.repeat(64);

export interface TestService {
  url: string;
  service: Service;
  audit: MemoryAuditSink;
  /** every log line the service wrote, as text */
  logs: string[];
  clock: { now: Date; advance(seconds: number): void };
  dataDir: string;
  /** a token for the dev client (all roles of the example config) */
  token(clientId?: string, secret?: string): Promise<string>;
  close(): Promise<void>;
}

/**
 * Starts a real veil HTTP service on 127.0.0.1 and an ephemeral port, on the example
 * configuration (or `configText`), a fresh data directory and an injectable clock.
 */
export async function startTestService(
  options: { configText?: string; dataDir?: string; start?: Date; issuer?: string; bodyReadTimeoutMs?: number; env?: Record<string, string> } = {},
): Promise<TestService> {
  const dataDir = options.dataDir ?? (await mkdtemp(join(tmpdir(), 'veil-http-')));
  let configFile = EXAMPLE_CONFIG;
  if (options.configText) {
    configFile = join(dataDir, 'config.yaml');
    await writeFile(configFile, options.configText);
  }
  const clock = {
    now: options.start ?? new Date(),
    advance(seconds: number) {
      this.now = new Date(this.now.getTime() + seconds * 1000);
    },
  };
  const logs: string[] = [];
  const destination = new Writable({
    write(chunk, _enc, cb) {
      logs.push(String(chunk));
      cb();
    },
  });
  const audit = new MemoryAuditSink();
  // the issuer must be known before listening: reserve it from the port after listen via baseUrl
  const service = await openService({
    configFile,
    dataDir,
    env: { VEIL_MASTER_KEY: MASTER_KEY_HEX, ...options.env },
    now: () => clock.now,
    baseUrl: options.issuer ?? 'http://veil.test',
    development: true,
    logDestination: destination,
    logLevel: 'info',
    audit,
    ...(options.bodyReadTimeoutMs === undefined ? {} : { bodyReadTimeoutMs: options.bodyReadTimeoutMs }),
  });
  await service.app.listen({ port: 0, host: '127.0.0.1' });
  const address = service.app.server.address() as { port: number };
  const url = `http://127.0.0.1:${address.port}`;
  return {
    url,
    service,
    audit,
    logs,
    clock,
    dataDir,
    async token(clientId = 'veil-dev', secret = service.devClient!.secret) {
      const res = await fetch(`${url}/connect/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ grant_type: 'client_credentials', client_id: clientId, client_secret: secret }),
      });
      if (res.status !== 200) throw new Error(`token request failed: ${res.status}`);
      return ((await res.json()) as { access_token: string }).access_token;
    },
    async close() {
      await service.app.close();
      if (!options.dataDir) await rm(dataDir, { recursive: true, force: true });
    },
  };
}
