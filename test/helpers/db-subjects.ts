import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { promisify } from 'node:util';
import { MemoryAuditSink } from './memory-audit-sink.ts';
import { openService, type Service } from '../../src/app/open-service.ts';
import { installSql } from '../../src/db/install-sql.ts';
import { ROOT } from './processes.ts';
import { personConfig } from './subject-config.ts';
import { databaseUrl, dbSocketDir, dropDatabase, psql, sql, type PsqlRun } from './postgres.ts';

const run = promisify(execFile);
export const MASTER_KEY_HEX = 'b'.repeat(64);

/**
 * Keys scoped to the data subject (issue 29) on the database door: Person.email (AES-SIV) and
 * Person.name (AES-GCM) under each subject's key, Person.city under a shared key. `ingest` may
 * protect, `desk` protect and unprotect (readers and the rewrap).
 */
export const SUBJECTS_CONFIG = personConfig();

/**
 * A real veil service in this process (so a test can erase through `service.subjects`, as the
 * admin API does) on the subject-scoped configuration, and a database of the real PostgreSQL with
 * schema veil installed and configured against it — over HTTP, or with `socket` over the local
 * socket too — and login roles.
 */
export interface SubjectsDb<R extends string> {
  db: string;
  role: Record<R, string>;
  service: Service;
  audit: MemoryAuditSink;
  /** every log line the service wrote */
  logs: string[];
  url: string;
  dataDir: string;
  configFile: string;
  on(script: string, user?: string): Promise<string[]>;
  attempt(script: string, user?: string): Promise<PsqlRun>;
  /** bin/veil with this service's data dir, configuration and master key, and the database's URL */
  cli(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }>;
  close(): Promise<void>;
}

export async function subjectsDb<R extends string>(label: string, roles: readonly R[], options: { socket?: boolean } = {}): Promise<SubjectsDb<R>> {
  const tag = `${process.pid}_${randomBytes(3).toString('hex')}`;
  const db = `veil_${label}_${tag}`;
  const role = Object.fromEntries(roles.map((r) => [r, `${r}_${tag}`])) as Record<R, string>;
  const dataDir = await mkdtemp(join(tmpdir(), 'veil-db-subjects-'));
  const configFile = join(dataDir, 'config.yaml');
  await writeFile(configFile, SUBJECTS_CONFIG);
  const env: Record<string, string> = { VEIL_MASTER_KEY: MASTER_KEY_HEX };
  let socketDir: string | undefined;
  if (options.socket) {
    const socket = await dbSocketDir();
    socketDir = socket.dir;
    Object.assign(env, socket.env);
  }
  const logs: string[] = [];
  const audit = new MemoryAuditSink();
  const service = await openService({
    configFile,
    dataDir,
    env,
    now: () => new Date(),
    baseUrl: 'http://veil.test',
    development: true,
    audit,
    logLevel: 'info',
    logDestination: new Writable({
      write(chunk, _enc, cb) {
        logs.push(String(chunk));
        cb();
      },
    }),
  });
  await service.app.listen({ port: 0, host: '127.0.0.1' });
  const url = `http://127.0.0.1:${(service.app.server.address() as { port: number }).port}`;
  await sql(
    `CREATE DATABASE ${db};\n${Object.values<string>(role)
      .map((r) => `CREATE ROLE ${r} LOGIN;`)
      .join('\n')}`,
  );
  const on = (script: string, user = 'postgres') => sql(script, { database: db, user });
  await on(installSql());
  // credentials go in as COPY data in production (veil db configure); a test database may hold them in a statement
  await on(`SELECT veil.configure('${url}', 'veil-dev', '${service.devClient!.secret}', 'ingest');`);
  if (env.VEIL_DB_SOCKET) await on(`SELECT veil.configure_socket('${env.VEIL_DB_SOCKET}');`);
  return {
    db,
    role,
    service,
    audit,
    logs,
    url,
    dataDir,
    configFile,
    on,
    attempt: (script: string, user = 'postgres') => psql(script, { database: db, user }),
    async cli(...args: string[]) {
      try {
        const { stdout, stderr } = await run(join(ROOT, 'bin/veil'), args, {
          env: { ...process.env, VEIL_PG_URL: databaseUrl(db), VEIL_DATA_DIR: dataDir, VEIL_CONFIG: configFile, VEIL_MASTER_KEY: MASTER_KEY_HEX },
          maxBuffer: 16 << 20,
        });
        return { code: 0, stdout, stderr };
      } catch (e) {
        const failed = e as { code: number; stdout: string; stderr: string };
        return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
      }
    },
    async close() {
      await dropDatabase(db, Object.values<string>(role));
      await service.app.close();
      await rm(dataDir, { recursive: true, force: true });
      if (socketDir) await rm(socketDir, { recursive: true, force: true });
    },
  };
}
