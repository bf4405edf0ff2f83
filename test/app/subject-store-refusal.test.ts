import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePorts, ROOT } from '../helpers/processes.ts';
import { personConfig } from '../helpers/subject-config.ts';

/**
 * Issue 40: serve, stream protect and stream unprotect refuse to start — before they reach Kafka —
 * when the configuration scopes keys to the data subject and the subject-key store is local where
 * it would split or lose the keys: one of several processes (VEIL_CONTROL_STORE=kafka with
 * VEIL_SUBJECT_STORE=local) or a data dir that goes with the process (VEIL_DATA_DIR_EPHEMERAL=true).
 */
const CONFIG = personConfig({
  extra: `
pipelines:
  p:
    source: { topics: [raw.refusal] }
    sink: { topic: clean.refusal }
    deadLetterTopic: dlq.refusal
    format: json
    fields: [ { path: email, field: Person.email } ]
    subject: { from: key }
    roles: [desk]
    rightsEvidences: { Role: desk }
    processingEvidences: { Action: Protect }
responders:
  desk:
    requestTopic: requests.refusal
    replyTopics: [replies.refusal]
    deadLetterTopic: refused.refusal
`,
});

const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

async function run(args: string[], env: Record<string, string>): Promise<{ code: number; out: string }> {
  const dir = await mkdtemp(join(tmpdir(), 'veil-refusal-'));
  dirs.push(dir);
  await writeFile(join(dir, 'veil.yaml'), CONFIG);
  const port = await freePorts(1);
  const full = [...args, '--config', join(dir, 'veil.yaml'), '--data-dir', join(dir, 'data'), '--port', String(port)];
  // nothing listens on this broker: a process that got as far as Kafka would wait for it, not exit at once
  const childEnv = { PATH: process.env.PATH!, HOME: dir, VEIL_MASTER_KEY: 'b'.repeat(64), VEIL_LOG_LEVEL: 'warn', KAFKA_BROKERS: '127.0.0.1:9', ...env };
  return new Promise((resolve) => {
    execFile(join(ROOT, 'bin/veil'), full, { env: childEnv, timeout: 60_000 }, (error, stdout, stderr) =>
      resolve({ code: error ? Number((error as { code?: number }).code ?? -1) : 0, out: stdout + stderr }),
    );
  });
}

describe('a local subject-key store that would split or lose keys is refused at start (SUBJECT_STORE_NOT_SHARED)', () => {
  const commands = [['serve'], ['stream', 'protect', '--pipeline', 'p'], ['stream', 'unprotect', '--responder', 'desk']].map((args) => ({
    args,
    name: args.join(' '),
  }));

  // (one of several processes on a shared control store: test/deploy/helm-serve-subjects.test.ts)
  it.each(commands)(
    'veil $name, on an ephemeral data dir',
    async ({ args }) => {
      const { code, out } = await run(args, { VEIL_DATA_DIR_EPHEMERAL: 'true' });
      expect(code, out).toBe(1);
      expect(out).toMatch(/SUBJECT_STORE_NOT_SHARED/);
      expect(out).toMatch(/VEIL_DATA_DIR_EPHEMERAL=true/);
    },
    90_000,
  );
});
