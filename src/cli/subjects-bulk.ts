import { BULK_ERASURE_MAX, verifyReceipt, type ErasureService, type SubjectActor } from '../subjects/index.ts';
import type { KeyProvider } from '../engine/index.ts';
import type { CliIo } from './io.ts';

/** One id a line, numbered from 1: blank lines (and a trailing newline) are skipped, a CR before the newline dropped. */
export function idLines(text: string): { line: number; id: string }[] {
  return text.split('\n').flatMap((raw, i) => {
    const id = raw.replace(/\r$/, '');
    return id.trim() === '' ? [] : [{ line: i + 1, id }];
  });
}

/**
 * `veil subjects erase --from FILE|-`: every id of the file erased, `batchSize` (at most
 * BULK_ERASURE_MAX) at a time (one wait for every host per batch, not per subject), one JSON line each on stdout — its line
 * number, reference, generation, whether it was erased before, and its receipt; or its line
 * number and why it was refused. Never the id: the output names subjects by reference only.
 * Resumable: erasing is idempotent, so a run started again (after a crash, a SIGKILL) erases what
 * is left and returns the receipts of what was erased before. Progress on stderr when it is a
 * terminal. 0 when every line was erased, 1 when any was refused.
 */
export async function eraseFromLines(
  text: string,
  service: ErasureService,
  reason: string,
  actor: SubjectActor,
  io: CliIo,
  batchSize = BULK_ERASURE_MAX,
): Promise<number> {
  const lines = idLines(text);
  const started = io.now().getTime();
  let erased = 0;
  let before = 0;
  let refused = 0;
  for (let i = 0; i < lines.length; i += batchSize) {
    const batch = lines.slice(i, i + batchSize);
    const outcomes = await service.eraseMany(
      batch.map((l) => l.id),
      reason,
      actor,
    );
    const out: string[] = [];
    for (const [k, outcome] of outcomes.entries()) {
      const line = batch[k]!.line;
      if (outcome.error) {
        refused++;
        out.push(JSON.stringify({ line, error: { code: outcome.error.code, message: outcome.error.message } }));
        continue;
      }
      const { erasure, receipt } = outcome.result;
      if (erasure.alreadyErased) before++;
      else erased++;
      out.push(JSON.stringify({ line, subject: erasure.subject, generation: erasure.generation, alreadyErased: erasure.alreadyErased, receipt }));
    }
    io.stdout(`${out.join('\n')}\n`);
    if (io.stderrIsTTY) io.stderr(`\rveil subjects: ${i + batch.length} of ${lines.length} lines`);
  }
  const seconds = ((io.now().getTime() - started) / 1000).toFixed(1);
  io.stderr(
    `${io.stderrIsTTY ? '\n' : ''}veil subjects: ${erased} erased, ${before} erased before, ${refused} refused, of ${lines.length} lines in ${seconds} s\n`,
  );
  return refused ? 1 : 0;
}

/**
 * `veil subjects verify-receipt` over many receipts: one a line (a JWS, or a JSON line `erase
 * --from` printed), one JSON line each on stdout — valid with its claims, or not with why.
 * 0 when every receipt is valid, 1 otherwise.
 */
export async function verifyLines(receipts: { line: number; receipt: string }[], keys: KeyProvider, io: CliIo): Promise<number> {
  let invalid = 0;
  const out: string[] = [];
  for (const { line, receipt } of receipts) {
    try {
      out.push(JSON.stringify({ line, valid: true, claims: await verifyReceipt(receipt, keys) }));
    } catch (e) {
      invalid++;
      out.push(JSON.stringify({ line, valid: false, error: { code: (e as { code?: string }).code ?? 'RECEIPT_INVALID', message: (e as Error).message } }));
    }
    if (out.length >= 1000) io.stdout(`${out.splice(0).join('\n')}\n`);
  }
  if (out.length) io.stdout(`${out.join('\n')}\n`);
  io.stderr(`veil subjects: ${receipts.length - invalid} valid, ${invalid} not valid, of ${receipts.length} receipts\n`);
  return invalid ? 1 : 0;
}

/**
 * The receipts a verify-receipt input holds: one JSON document (what `erase` prints, over several
 * lines) or one JWS is one receipt; otherwise one a line, each a JWS or a JSON object with a
 * `receipt` (what `erase --from` prints).
 */
export function receiptsOf(text: string): { line: number; receipt: string }[] {
  const trimmed = text.trim();
  const single = (() => {
    try {
      const doc = JSON.parse(trimmed) as { receipt?: unknown };
      return typeof doc === 'object' && doc !== null && typeof doc.receipt === 'string' ? doc.receipt : undefined;
    } catch {
      return /^[^\s]+$/.test(trimmed) ? trimmed : undefined;
    }
  })();
  if (single !== undefined) return [{ line: 1, receipt: single }];
  return idLines(text).map(({ line, id }) => ({ line, receipt: receiptOfLine(id.trim()) }));
}

function receiptOfLine(line: string): string {
  if (!line.startsWith('{')) return line;
  try {
    const receipt = (JSON.parse(line) as { receipt?: unknown }).receipt;
    return typeof receipt === 'string' ? receipt : '';
  } catch {
    return '';
  }
}
