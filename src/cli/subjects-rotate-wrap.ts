import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { FileAuditSink, type AuditRotation } from '../audit/index.ts';
import { VeilError } from '../engine/index.ts';
import type { LocalKeystore } from '../keystore/index.ts';
import { openSubjectKeyStore, rotateWrappingKey, subjectStoreSettings, type WrapRotation } from '../subjects/index.ts';
import type { CliIo } from './io.ts';

/**
 * `veil subjects rotate-wrap-key` on an open key set (docs/erasure.md, "Backups"): the rotation,
 * its JSON on stdout, and one audit record in the data dir's audit.log — admin action
 * `subject.rotate-wrap-key`, channel cli, who ran it, the new version and the versions destroyed
 * (or the code it failed with) — so an auditor sees when backups were shredded, as they see each
 * erasure. Never a key.
 */
export async function rotateWrapKey(keystore: LocalKeystore, dataDir: string, by: string, rotation: AuditRotation, io: CliIo): Promise<number> {
  const store = await openSubjectKeyStore({ keystore, dataDir, settings: subjectStoreSettings(io.env) });
  const audit = new FileAuditSink(join(dataDir, 'audit.log'), rotation);
  try {
    let done: WrapRotation;
    try {
      done = await rotateWrappingKey(keystore, store);
    } catch (e) {
      await audit.record(event(io.now(), by, 'failed', undefined, e instanceof VeilError ? e.code : 'INTERNAL')).catch(() => undefined);
      throw e;
    }
    await audit.record(
      event(
        io.now(),
        by,
        'ok',
        `veil-subjects v${done.version}; destroyed ${done.destroyed.map((v) => `v${v}`).join(', ') || 'none'}; ${done.rewrapped} of ${done.live} rewrapped`,
      ),
    );
    io.stdout(`${JSON.stringify(done, null, 2)}\n`);
    io.stderr(
      `veil subjects: ${done.rewrapped} of ${done.live} living subject keys rewrapped under version ${done.version}; version(s) ${done.destroyed.join(', ') || '(none)'} destroyed\n`,
    );
    return 0;
  } finally {
    await store.close();
    await audit.close();
  }
}

function event(now: Date, by: string, outcome: 'ok' | 'failed', target: string | undefined, code?: string) {
  return {
    eventId: randomUUID(),
    time: now.toISOString(),
    requestId: randomUUID(),
    channel: 'cli' as const,
    subject: by,
    outcome,
    ...(code ? { code } : {}),
    instances: 0,
    fields: [],
    admin: { action: 'subject.rotate-wrap-key', ...(target ? { target } : {}) },
  };
}
