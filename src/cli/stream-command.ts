import { parseArgs } from 'node:util';
import { openStream } from '../app/open-stream.ts';
import { openResponders } from '../app/open-responders.ts';
import { resolveConfigPath, resolveDataDir } from '../app/paths.ts';
import { VeilError } from '../engine/errors.ts';
import type { Command } from './io.ts';

export const streamHelp = `Usage: veil stream protect [--config F] [--pipeline NAME]... [--brokers H:P,...] [--registry URL] [--port N]
       veil stream unprotect [--config F] [--responder NAME]... [--brokers H:P,...]

unprotect: serves transform requests from the responders' request topics (its own consumer
group), replying on allowed reply topics; see README "Unprotect over Kafka".

Runs the configuration's protect pipelines: raw topics → protected clean topics, exactly-once by
default. Instances with the same configuration share the partitions (one consumer group per
pipeline). /healthz, /readyz and /metrics on --port (default $VEIL_STREAM_PORT, else 9464).
  --brokers   default $KAFKA_BROKERS, else 127.0.0.1:9092
  --registry  Confluent-API schema registry for avro pipelines (default $SCHEMA_REGISTRY_URL)
SIGTERM finishes or aborts the batch in flight, leaves the group and exits.
`;

export const streamCommand: Command = async (args, io) => {
  let parsed;
  try {
    parsed = parseArgs({
      args, allowPositionals: true,
      options: { config: { type: 'string' }, 'data-dir': { type: 'string' }, pipeline: { type: 'string', multiple: true }, responder: { type: 'string', multiple: true }, brokers: { type: 'string' }, registry: { type: 'string' }, port: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
    });
  } catch (e) {
    io.stderr(`veil stream: ${(e as Error).message}\n`);
    return 2;
  }
  const { values, positionals } = parsed;
  if (values.help || (positionals[0] !== 'protect' && positionals[0] !== 'unprotect')) {
    io.stdout(streamHelp);
    return values.help ? 0 : 2;
  }
  if (positionals[0] === 'unprotect') {
    try {
      const responders = await openResponders({
        configFile: resolveConfigPath(values.config, io.env, io.cwd),
        dataDir: resolveDataDir(values['data-dir'], io.env, io.cwd),
        env: io.env, now: io.now,
        brokers: (values.brokers ?? io.env.KAFKA_BROKERS ?? '127.0.0.1:9092').split(','),
        ...(values.responder ? { names: values.responder } : {}),
        development: io.env.VEIL_ENV !== 'production',
        notice: (line) => io.stderr(`veil stream: ${line}\n`),
      });
      await responders.start();
      io.stderr(`veil stream: serving ${responders.responders.map((r) => r.groupId).join(', ')}\n`);
      await new Promise<void>((resolve) => {
        const stop = async () => {
          await responders.stop();
          resolve();
        };
        process.once('SIGTERM', stop);
        process.once('SIGINT', stop);
      });
      return 0;
    } catch (e) {
      io.stderr(`veil stream: ${e instanceof VeilError ? `${e.message} [${e.code}]` : `cannot start: ${(e as Error).message}`}\n`);
      return 1;
    }
  }
  try {
    const stream = await openStream({
      configFile: resolveConfigPath(values.config, io.env, io.cwd),
      dataDir: resolveDataDir(values['data-dir'], io.env, io.cwd),
      env: io.env, now: io.now,
      brokers: (values.brokers ?? io.env.KAFKA_BROKERS ?? '127.0.0.1:9092').split(','),
      registryUrl: values.registry ?? io.env.SCHEMA_REGISTRY_URL,
      ...(values.pipeline ? { pipelines: values.pipeline } : {}),
      development: io.env.VEIL_ENV !== 'production',
      notice: (line) => io.stderr(`veil stream: ${line}\n`),
    });
    const server = await stream.listen(Number(values.port ?? io.env.VEIL_STREAM_PORT ?? 9464), io.env.VEIL_HOST ?? '127.0.0.1');
    await stream.start();
    io.stderr(`veil stream: running ${stream.pipelines.map((p) => p.groupId).join(', ')}\n`);
    await new Promise<void>((resolve) => {
      const stop = async () => {
        await stream.stop();
        server.close();
        resolve();
      };
      process.once('SIGTERM', stop);
      process.once('SIGINT', stop);
    });
    return 0;
  } catch (e) {
    io.stderr(`veil stream: ${e instanceof VeilError ? `${e.message} [${e.code}]` : `cannot start: ${(e as Error).message}`}\n`);
    return 1;
  }
};
