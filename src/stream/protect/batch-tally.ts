import type { ChunkOutcome } from './record-protector.ts';

/** counts by a key of two parts joined by NUL, read back as pairs */
class PairCounts {
  private readonly counts = new Map<string, number>();

  add(a: string, b: string): void {
    const key = `${a}\u0000${b}`;
    this.counts.set(key, (this.counts.get(key) ?? 0) + 1);
  }

  *entries(): Generator<[string, string, number]> {
    for (const [key, n] of this.counts) {
      const [a, b] = key.split('\u0000') as [string, string];
      yield [a, b, n];
    }
  }
}

/**
 * What one batch's records add up to, counted as they are made and reported only once the whole
 * batch was sent (a batch that fails is read again and counted then): dead letters by code, the
 * unmapped guard's dead-lettered findings and report-mode passes by path and kind, and the
 * SCHEMA_PATH_UNKNOWN refusals by schema id and path.
 */
export class BatchTally {
  readonly deadLetters = new Map<string, number>();
  /** the unmapped guard's dead letters: path, kind */
  readonly findings = new PairCounts();
  /** what the guard's report mode passed: path, kind */
  readonly reported = new PairCounts();
  /** SCHEMA_PATH_UNKNOWN dead letters: schema id ('' when none), path ('' when none) */
  readonly refused = new PairCounts();

  /** a record's outcome from its protection */
  outcome(outcome: ChunkOutcome): void {
    if ('kind' in outcome && outcome.kind !== undefined) this.findings.add(outcome.path ?? '', outcome.kind);
    if ('reported' in outcome && outcome.reported !== undefined) this.reported.add(outcome.reported.path, outcome.reported.kind);
    if ('code' in outcome && outcome.code === 'SCHEMA_PATH_UNKNOWN') this.refused.add(String(outcome.schema ?? ''), outcome.path ?? '');
  }

  /** a dead letter written, with its code */
  deadLetter(code: string): void {
    this.deadLetters.set(code, (this.deadLetters.get(code) ?? 0) + 1);
  }
}
