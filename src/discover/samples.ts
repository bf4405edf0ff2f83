import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { DiscoverFault } from './errors.ts';

/** One sampled record: its value (a JSON value) and, from Kafka, its key as text. */
export interface Sampled {
  value: unknown;
  key?: string | null;
}

/**
 * Where `veil discover` samples records. Values are parsed, handed to the profiler one by one and
 * never kept, logged or printed; a record that does not parse is counted, not shown.
 */
export interface SampleReport {
  sampled: number;
  unparsable: number;
}

function parsed(text: string, report: SampleReport): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    report.unparsable++;
    return undefined;
  }
}

/** The first `limit` lines of a JSON-lines file. */
export async function sampleFile(file: string, limit: number, each: (s: Sampled) => void): Promise<SampleReport> {
  const report = { sampled: 0, unparsable: 0 };
  const lines = createInterface({ input: createReadStream(file, 'utf8'), crlfDelay: Infinity });
  for await (const line of lines) {
    if (report.sampled + report.unparsable >= limit) break;
    if (line.trim() === '') continue;
    const value = parsed(line, report);
    if (value !== undefined) {
      report.sampled++;
      each({ value });
    }
  }
  lines.close();
  return report;
}

/** What sampleTable needs of PostgreSQL: a psql run of a script (src/db's runPsql). */
export type RunPsql = (script: string) => Promise<{ code: number | null; stdout: string; stderr: string }>;

/** `schema.table` or `table`, each part an SQL identifier (quoted when sent) */
const TABLE = /^([A-Za-z_][A-Za-z0-9_$]*)(?:\.([A-Za-z_][A-Za-z0-9_$]*))?$/;

/** Up to `limit` rows of a PostgreSQL table, each as its JSON object (row_to_json), through psql. */
export async function sampleTable(psql: RunPsql, table: string, limit: number, each: (s: Sampled) => void): Promise<SampleReport> {
  const m = TABLE.exec(table);
  if (!m) throw new DiscoverFault('TABLE_NAME_INVALID', 'the table must be named as table or schema.table (letters, digits, _ and $)');
  const name = [m[1], m[2]]
    .filter(Boolean)
    .map((p) => `"${p}"`)
    .join('.');
  const result = await psql(`\\pset format unaligned\n\\pset tuples_only on\nSELECT row_to_json(t)::text FROM ${name} t LIMIT ${Math.floor(limit)};\n`);
  // psql's error names the table and the database, not a row
  if (result.code !== 0)
    throw new DiscoverFault('TABLE_UNREADABLE', `psql could not read ${table}: ${result.stderr.split('\n')[0]?.replace(/^psql:[^:]*:\d+: /, '') ?? 'error'}`);
  const report = { sampled: 0, unparsable: 0 };
  for (const line of result.stdout.split('\n')) {
    if (line === '') continue;
    const value = parsed(line, report);
    if (value !== undefined) {
      report.sampled++;
      each({ value });
    }
  }
  return report;
}

/**
 * Raw records (a topic's: key and value bytes) as samples: each value decoded by `decode` (its
 * format's reader); one that does not decode, or has no value, is counted, not shown.
 */
export function decodedSamples(
  decode: (bytes: Buffer) => Promise<unknown>,
  each: (s: Sampled) => void,
): { take(record: { key: Buffer | null; value: Buffer | null }): Promise<void>; report: SampleReport } {
  const report = { sampled: 0, unparsable: 0 };
  return {
    report,
    async take({ key, value }) {
      let decoded: unknown;
      try {
        decoded = value === null ? undefined : await decode(value);
      } catch {
        report.unparsable++;
        return;
      }
      if (decoded === undefined) return;
      report.sampled++;
      each({ value: decoded, key: key === null ? null : key.toString('utf8') });
    },
  };
}
