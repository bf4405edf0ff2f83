import type { ControlWrite } from './control-log.ts';

/** The key-set entry whose HMAC-SHA256 authenticates configuration versions in a shared store. */
export const CONTROL_MAC_KEY = 'veil-control';

/**
 * The bytes a configuration write's MAC covers: everything that makes it what it is — the history,
 * the head it was based on (a replayed older version based on a newer head does not verify),
 * its writer and time, its text and who published it with which note.
 */
export function authInput(w: Pick<ControlWrite, 'history' | 'basedOn' | 'writer' | 'at' | 'body' | 'meta'>): Buffer {
  return Buffer.from(
    JSON.stringify(['veil-control-v1', w.history, w.basedOn, w.writer, w.at, w.body, w.meta ? [w.meta.by, w.meta.source, w.meta.note] : null]),
    'utf8',
  );
}
