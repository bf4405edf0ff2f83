import { writeFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { discoverSources, type SampleReport, type Sampled } from '../app/open-discover-sources.ts';
import { DiscoverFault, RECORD_FORMATS, type RecordFormat } from '../discover/index.ts';
import { DEFAULT_BROKERS, kafkaConnection, KafkaError } from '../kafka/index.ts';
import { registrySettings } from '../stream/registry/index.ts';
import { Profiler } from '../discover/index.ts';
import { propose } from '../discover/index.ts';
import type { Command } from './io.ts';
import { VeilError } from '../engine/index.ts';

export const discoverHelp = `Usage: veil discover (--file F | --topic T | --table T) [options]

Samples records, finds the fields that hold personal data (validators: email, payment card, IBAN,
phone, US SSN, UK NINO, French NIR, IP address; by field name: date of birth, person name) and
proposes a configuration draft. Prints paths, kinds and counts only: sampled values are never
stored, logged or printed.

Sources:
  --file F       a JSON-lines file
  --topic T      a Kafka topic (committed records, from the beginning): JSON values, or with
                 --format avro|json-schema|protobuf the Confluent wire format of that format
  --table T      a PostgreSQL table or schema.table (each row as JSON)
Options:
  --sample N     records to sample (default 1000)
  --min-share S  report a field when at least this share of its values is of one kind (default 0.8)
  --draft F      write the configuration draft to F ('-': standard output)
  --brokers B    for --topic: default $KAFKA_BROKERS, else 127.0.0.1:9092
  --format F     for --topic: json (default), avro, json-schema or protobuf
  --registry URL for the registry formats: default $SCHEMA_REGISTRY_URL
  --db-url U     for --table: default $VEIL_PG_URL
Exit codes: 0 done, 1 the source cannot be read, 2 usage error.
`;

const FORMATS: string[] = [...RECORD_FORMATS];

function usage(io: Parameters<Command>[1], message: string): number {
  io.stderr(`veil discover: ${message}\n`);
  return 2;
}

/** `veil discover`'s command line, checked */
interface DiscoverOptions {
  file: string | undefined;
  topic: string | undefined;
  table: string | undefined;
  /** --sample: records to sample */
  limit: number;
  minShare: number;
  draft: string | undefined;
  brokers: string | undefined;
  dbUrl: string | undefined;
  format: RecordFormat;
  registryUrl: string | undefined;
}

/** the options, or the exit code when the command ends here: 0 after --help, 2 after a usage error (its message printed) */
function discoverOptions(args: string[], io: Parameters<Command>[1]): DiscoverOptions | number {
  let values;
  try {
    ({ values } = parseArgs({
      args,
      options: {
        file: { type: 'string' },
        topic: { type: 'string' },
        table: { type: 'string' },
        sample: { type: 'string' },
        'min-share': { type: 'string' },
        draft: { type: 'string' },
        brokers: { type: 'string' },
        'db-url': { type: 'string' },
        format: { type: 'string' },
        registry: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    }));
  } catch (e) {
    return usage(io, (e as Error).message);
  }
  if (values.help) {
    io.stdout(discoverHelp);
    return 0;
  }
  const sources = [values.file, values.topic, values.table].filter((v) => v !== undefined);
  if (sources.length !== 1) return usage(io, 'name one source: --file, --topic or --table');
  const limit = Number(values.sample ?? 1000);
  const minShare = Number(values['min-share'] ?? 0.8);
  if (!Number.isInteger(limit) || limit < 1) return usage(io, '--sample must be a positive integer');
  if (!(minShare > 0 && minShare <= 1)) return usage(io, '--min-share must be in (0, 1]');
  const dbUrl = values['db-url'] ?? io.env.VEIL_PG_URL;
  if (values.table !== undefined && !dbUrl) return usage(io, '--table needs --db-url or $VEIL_PG_URL');

  const format = values.format ?? 'json';
  const registryUrl = values.registry ?? io.env.SCHEMA_REGISTRY_URL;
  if (!FORMATS.includes(format)) return usage(io, `--format must be one of ${FORMATS.join(', ')}`);
  if (format !== 'json' && !registryUrl) return usage(io, `--format ${format} needs --registry or $SCHEMA_REGISTRY_URL`);
  return {
    file: values.file,
    topic: values.topic,
    table: values.table,
    limit,
    minShare,
    draft: values.draft,
    brokers: values.brokers,
    dbUrl,
    format: format as RecordFormat,
    registryUrl,
  };
}

/** the one source named, read up to `limit` records, each handed to `each` */
async function sampleSource(options: DiscoverOptions, io: Parameters<Command>[1], each: (s: Sampled) => void): Promise<SampleReport> {
  const { limit, registryUrl } = options;
  if (options.file !== undefined) return discoverSources.file(options.file, limit, each);
  if (options.topic !== undefined) {
    const connection = kafkaConnection(io.env, { ...(options.brokers ? { brokers: options.brokers.split(',') } : {}), defaultBrokers: DEFAULT_BROKERS });
    return discoverSources.topic(
      connection,
      options.topic,
      limit,
      each,
      options.format,
      registrySettings(io.env, { ...(registryUrl ? { url: registryUrl } : {}) }),
    );
  }
  return discoverSources.table(options.dbUrl!, options.table!, limit, each);
}

export const discoverCommand: Command = async (args, io) => {
  const options = discoverOptions(args, io);
  if (typeof options === 'number') return options;
  const { format, draft } = options;
  const profiler = new Profiler();
  let report: SampleReport;
  try {
    report = await sampleSource(options, io, (s) => profiler.add(s.value, s.key));
  } catch (e) {
    // a source's own message (a path, a topic, a broker's refusal, psql's), a setting's, or only the error's name: never a record
    const own = e instanceof DiscoverFault || e instanceof KafkaError || e instanceof VeilError || (e as { code?: string }).code === 'ENOENT';
    io.stderr(
      `veil discover: cannot sample: ${own ? (e as Error).message : (e as Error).name}${e instanceof VeilError || e instanceof KafkaError ? ` [${e.code}]` : ''}\n`,
    );
    return 1;
  }
  const findings = profiler.findings(options.minShare);
  io.stdout(
    `sampled ${report.sampled} record(s)${report.unparsable ? `, ${report.unparsable} not ${format !== 'json' && options.topic !== undefined ? 'decodable' : 'JSON'} (skipped)` : ''}; ${findings.length} field(s) hold personal data\n`,
  );
  for (const f of findings)
    io.stdout(
      `  ${f.path.padEnd(28)} ${f.kind.padEnd(14)} ${String(f.matched).padStart(6)}/${String(f.values).padEnd(6)} ${(f.share * 100).toFixed(1).padStart(5)}%  ${f.confidence}\n`,
    );
  if (draft !== undefined && findings.length > 0) {
    const proposal = propose(findings, options.topic !== undefined ? { topic: options.topic, format } : {});
    if (draft === '-') io.stdout(proposal.yaml);
    else {
      await writeFile(draft, proposal.yaml, { mode: 0o600 });
      io.stdout(`draft written to ${draft}: check it with veil config validate ${draft}\n`);
    }
  }
  return 0;
};
