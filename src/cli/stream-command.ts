import { parseArgs } from 'node:util';
import { openStream } from '../app/open-stream.ts';
import { openResponders } from '../app/open-responders.ts';
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { DEFAULT_BROKERS, kafkaConnection, openKafkaPort, streamClient, type KafkaPort } from '../kafka/index.ts';
import { UnprotectClient } from '../stream/unprotect/index.ts';
import type { RewrapSpec } from '../stream/protect/index.ts';
import { resolveConfigPath, resolveDataDir } from '../env/index.ts';
import { VeilError } from '../engine/index.ts';
import { usageExitCode, type Command } from './io.ts';

export const streamHelp = `Usage: veil stream protect [--config F] [--pipeline NAME]... [--brokers H:P,...] [--registry URL] [--port N]
       veil stream unprotect [--config F] [--responder NAME]... [--brokers H:P,...] [--port N]
       veil stream rewrap --pipeline NAME --to TOPIC --role ROLE [--from TOPIC] [--rights N=V]...
                          [--unprotect N=V]... [--dead-letter TOPIC] [--group G] [--port N]

       veil stream request --request-topic T --reply-topic R --token-file F [--request FILE|-] [--timeout MS]

unprotect: serves transform requests from the responders' request topics (its own consumer
group), replying on allowed reply topics; see docs/stream.md, "Unprotect over Kafka". /healthz,
/readyz and /metrics on --port (default $VEIL_UNPROTECT_PORT, else 9465).
request: sends one transform request body over Kafka and prints the reply (exit 0 on status 200).
rewrap: after a key rotation, re-protects the pipeline's clean topic (--from, default its sink)
  into a new topic (--to) under each key's primary version, exactly-once like protect, as its
  own consumer group (--group, default veil-rewrap-NAME). ROLE must be granted Protect and
  Unprotect on the pipeline's fields; its rights evidences default to Role=ROLE, the unprotect
  processing context to Action=Unprotect. A value under a key version the key set no longer
  holds is dead-lettered (KEY_VERSION_UNKNOWN), never dropped. It runs until stopped: stop it
  when its lag (/metrics, veil_stream_consumer_lag) is 0, then move readers to the new topic.

Runs the configuration's protect pipelines: raw topics → protected clean topics, exactly-once by
default. Instances with the same configuration share the partitions (one consumer group per
pipeline). /healthz, /readyz and /metrics on --port (default $VEIL_STREAM_PORT, else 9464).
  --brokers   default $KAFKA_BROKERS, else bootstrap.servers of $VEIL_KAFKA_CONFIG_FILE, else 127.0.0.1:9092
              TLS and SASL: VEIL_KAFKA_CONFIG_FILE (a client.properties) and VEIL_KAFKA_<PROPERTY>
              (docs/kafka-clients.md#security)
  --client    the Kafka client: librdkafka (default) or kafkajs (default $VEIL_STREAM_CLIENT)
  --registry  Confluent-API schema registry for avro pipelines (default $SCHEMA_REGISTRY_URL)
SIGTERM finishes or aborts the batch in flight, leaves the group and exits.
`;

const SUBCOMMANDS = new Set(['protect', 'unprotect', 'request', 'rewrap']);

export const streamCommand: Command = async (args, io) => {
  let parsed;
  try {
    parsed = parseArgs({
      args,
      allowPositionals: true,
      options: {
        config: { type: 'string' },
        'data-dir': { type: 'string' },
        pipeline: { type: 'string', multiple: true },
        responder: { type: 'string', multiple: true },
        'request-topic': { type: 'string' },
        'reply-topic': { type: 'string' },
        'token-file': { type: 'string' },
        request: { type: 'string' },
        timeout: { type: 'string' },
        brokers: { type: 'string' },
        from: { type: 'string' },
        to: { type: 'string' },
        role: { type: 'string' },
        rights: { type: 'string', multiple: true },
        unprotect: { type: 'string', multiple: true },
        'dead-letter': { type: 'string' },
        group: { type: 'string' },
        client: { type: 'string' },
        registry: { type: 'string' },
        port: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (e) {
    io.stderr(`veil stream: ${(e as Error).message}\n`);
    return 2;
  }
  const { values, positionals } = parsed;
  const sub = positionals[0];
  if (values.help || sub === undefined || !SUBCOMMANDS.has(sub)) {
    io.stdout(streamHelp);
    return usageExitCode(values.help === true, sub, (s) => SUBCOMMANDS.has(s));
  }
  if (sub === 'request') return sendRequest(values, io);
  const stopTimeout = Number(io.env.VEIL_STOP_TIMEOUT_MS ?? 30_000);
  const common = streamSettings(values, io);
  try {
    if (sub === 'unprotect') {
      await serveResponders(common, values.responder, values.port, io, stopTimeout);
      return 0;
    }
    let rewrap: RewrapSpec | undefined;
    if (sub === 'rewrap') {
      const spec = rewrapSpec(values);
      if (typeof spec === 'string') {
        io.stderr(`veil stream rewrap: ${spec}\n`);
        return 2;
      }
      rewrap = spec;
    }
    await runPipelines(
      common,
      { pipelines: values.pipeline, registryUrl: values.registry ?? io.env.SCHEMA_REGISTRY_URL, port: values.port, rewrap },
      io,
      stopTimeout,
    );
    return 0;
  } catch (e) {
    io.stderr(`veil stream: ${e instanceof VeilError ? `${e.message} [${e.code}]` : `cannot start: ${(e as Error).message}`}\n`);
    return 1;
  }
};

/** what protect, rewrap and unprotect share: the configuration, the data dir, the cluster and its client */
function streamSettings(
  values: { config?: string | undefined; 'data-dir'?: string | undefined; brokers?: string | undefined; client?: string | undefined },
  io: Parameters<Command>[1],
) {
  return {
    configFile: resolveConfigPath(values.config, io.env, io.cwd),
    dataDir: resolveDataDir(values['data-dir'], io.env, io.cwd),
    env: io.env,
    now: io.now,
    ...(values.brokers ? { brokers: values.brokers.split(',') } : {}),
    client: values.client ?? io.env.VEIL_STREAM_CLIENT,
    development: io.env.VEIL_ENV !== 'production',
    notice: (line: string) => io.stderr(`veil stream: ${line}\n`),
  };
}

/** `veil stream unprotect`: the responders (all, or those named) serve until a signal */
async function serveResponders(
  common: ReturnType<typeof streamSettings>,
  names: string[] | undefined,
  port: string | undefined,
  io: Parameters<Command>[1],
  stopTimeout: number,
): Promise<void> {
  const responders = await openResponders({ ...common, ...(names ? { names } : {}) });
  await responders.listen(Number(port ?? io.env.VEIL_UNPROTECT_PORT ?? 9465), io.env.VEIL_HOST ?? '127.0.0.1');
  await responders.start();
  io.stderr(`veil stream: serving ${responders.responders.map((r) => r.groupId).join(', ')}\n`);
  await untilSignal(() => responders.stop(), io.stderr, stopTimeout);
}

/** `veil stream protect` and `rewrap`: the pipelines (all, or those named) run until a signal */
async function runPipelines(
  common: ReturnType<typeof streamSettings>,
  options: { pipelines: string[] | undefined; registryUrl: string | undefined; port: string | undefined; rewrap: RewrapSpec | undefined },
  io: Parameters<Command>[1],
  stopTimeout: number,
): Promise<void> {
  const { pipelines, rewrap } = options;
  const stream = await openStream({ ...common, registryUrl: options.registryUrl, ...(pipelines ? { pipelines } : {}), ...(rewrap ? { rewrap } : {}) });
  await stream.listen(Number(options.port ?? io.env.VEIL_STREAM_PORT ?? 9464), io.env.VEIL_HOST ?? '127.0.0.1');
  await stream.start();
  io.stderr(`veil stream: running ${stream.pipelines.map((p) => p.groupId).join(', ')}\n`);
  // stop() closes the operations server too
  await untilSignal(() => stream.stop(), io.stderr, stopTimeout);
}

/**
 * Resolves once SIGTERM or SIGINT arrived and `stop` finished (the in-flight batch ends first),
 * or after VEIL_STOP_TIMEOUT_MS (default 30 s) if it does not. Then the process exits even if a
 * client library left a socket open (kafkajs can, after a broker restart): an unfinished
 * transaction is aborted by the next owner's fence, so exiting never breaks exactly-once.
 */
function untilSignal(stop: () => Promise<void>, stderr: (line: string) => void, timeoutMs: number): Promise<void> {
  return new Promise((resolve) => {
    const handler = async () => {
      const late = new Promise<'late'>((r) => setTimeout(() => r('late'), timeoutMs).unref());
      if ((await Promise.race([stop().then(() => 'stopped' as const), late])) === 'late') stderr(`veil stream: did not stop within ${timeoutMs} ms; exiting\n`);
      resolve();
      setTimeout(() => process.exit(), 2000).unref();
    };
    process.once('SIGTERM', handler);
    process.once('SIGINT', handler);
  });
}

/** rewrap's options as a RewrapSpec, or what is wrong with them (a usage error). */
function rewrapSpec(values: Record<string, string | boolean | string[] | undefined>): RewrapSpec | string {
  const pipelines = values.pipeline as string[] | undefined;
  const to = values.to as string | undefined;
  const role = values.role as string | undefined;
  if (pipelines?.length !== 1 || !to || !role) return 'needs one --pipeline, --to and --role';
  const pairs = (list: string[] | undefined, option: string): Record<string, string> | string => {
    const out: Record<string, string> = {};
    for (const item of list ?? []) {
      const at = item.indexOf('=');
      if (at <= 0 || at === item.length - 1) return `--${option} takes Name=Value, not ${JSON.stringify(item.slice(0, 64))}`;
      out[item.slice(0, at)] = item.slice(at + 1);
    }
    return out;
  };
  const rights = pairs(values.rights as string[] | undefined, 'rights');
  const unprotect = pairs(values.unprotect as string[] | undefined, 'unprotect');
  if (typeof rights === 'string') return rights;
  if (typeof unprotect === 'string') return unprotect;
  const optional = (key: string, name: string) => (typeof values[key] === 'string' ? { [name]: values[key] as string } : {});
  return {
    to,
    roles: [role],
    rightsEvidences: Object.keys(rights).length ? rights : { Role: role },
    unprotectEvidences: Object.keys(unprotect).length ? unprotect : { Action: 'Unprotect' },
    ...optional('from', 'from'),
    ...optional('dead-letter', 'deadLetterTopic'),
    ...optional('group', 'groupId'),
  };
}

/** `veil stream request`: one request/reply round trip through UnprotectClient. */
async function sendRequest(values: Record<string, string | boolean | string[] | undefined>, io: Parameters<Command>[1]): Promise<number> {
  const requestTopic = values['request-topic'] as string | undefined;
  const replyTopic = values['reply-topic'] as string | undefined;
  const tokenFile = values['token-file'] as string | undefined;
  if (!requestTopic || !replyTopic || !tokenFile) {
    io.stderr('veil stream request: needs --request-topic, --reply-topic and --token-file\n');
    return 2;
  }
  const source = (values.request as string | undefined) ?? '-';
  const text = source === '-' ? await io.readStdin() : await readFile(resolve(io.cwd, source), 'utf8');
  const token = (await readFile(resolve(io.cwd, tokenFile), 'utf8')).trim();
  const brokers = values.brokers as string | undefined;
  let kafka: KafkaPort | undefined;
  let client: UnprotectClient | undefined;
  try {
    const connection = kafkaConnection(io.env, { ...(brokers ? { brokers: brokers.split(',') } : {}), defaultBrokers: DEFAULT_BROKERS });
    kafka = await openKafkaPort(streamClient((values.client as string | undefined) ?? io.env.VEIL_STREAM_CLIENT), { connection, clientId: 'veil-request' });
    client = await UnprotectClient.connect({ kafka, requestTopic, replyTopic });
    const reply = await client.request(JSON.parse(text), { token, timeoutMs: Number(values.timeout ?? 10_000) });
    io.stdout(`${JSON.stringify(reply.body, null, 2)}\n`);
    return reply.status === 200 ? 0 : 1;
  } catch (e) {
    io.stderr(`veil stream request: ${(e as Error).message}\n`);
    return 1;
  } finally {
    await client?.close().catch(() => undefined);
    await kafka?.disconnect().catch(() => undefined);
  }
}
