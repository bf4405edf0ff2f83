import type { Server } from 'node:http';
import { join } from 'node:path';
import Fastify, { type FastifyInstance } from 'fastify';
import { Registry } from 'prom-client';
import type { Logger } from 'pino';
import { FileAuditSink, type AuditSink } from '../audit/index.ts';
import { collectProcessMetrics, openTracing } from '../observability/index.ts';
import { VeilError } from '../engine/index.ts';
import { CachingVerifier, TokenVerifier } from '../identity/index.ts';
import { JwtSigner, logKekTransitions } from '../keystore/index.ts';
import { DEFAULT_BROKERS, kafkaConnection, openKafkaPort, streamClient } from '../kafka/index.ts';
import { ResponderRestarts, UnprotectResponder } from '../stream/unprotect/index.ts';
import { KafkaContact, reportingContact } from '../stream/protect/index.ts';
import { createLogger } from './logger.ts';
import { openActiveEngine, type ActiveEngine } from './open-active-engine.ts';
import type { StreamOptions } from './open-stream.ts';
import { registerOpsRoutes } from '../http/routes/ops-routes.ts';
import { lazySubjectKeyStore, subjectStoreSettings } from '../subjects/index.ts';

export interface Responders {
  responders: UnprotectResponder[];
  logger: Logger;
  start(): Promise<void>;
  /**
   * /healthz (the KEK's lease, the control store, the running version), /readyz (started and not
   * stopping) and /metrics (the process's) on this port — what a container's probes and a
   * ServiceMonitor use, as `veil stream protect` serves them
   */
  listen(port: number, host: string): Promise<Server>;
  stop(): Promise<void>;
}

export type ResponderOptions = Omit<StreamOptions, 'registryUrl' | 'pipelines'> & { names?: string[]; audit?: AuditSink };

/**
 * Wires the unprotect-on-demand responders: tokens are verified like the HTTP API's (veil's own
 * issuer — VEIL_BASE_URL or identity.issuer, as `veil serve` uses — and the external providers).
 */
export async function openResponders(options: ResponderOptions): Promise<Responders> {
  const logger = options.logger ?? createLogger(options.env.VEIL_LOG_LEVEL ?? 'info');
  // the cluster and its security, read first: a setting it refuses stops the start before anything opens
  const connection = kafkaConnection(options.env, { ...(options.brokers ? { brokers: options.brokers } : {}), defaultBrokers: DEFAULT_BROKERS });
  // off unless OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT is set: a span per request, its trace continued in the reply
  const tracing = await openTracing(options.env, { serviceName: 'veil-unprotect', log: logger });
  const active = await openActiveEngine({
    configFile: options.configFile,
    dataDir: options.dataDir,
    env: options.env,
    now: options.now,
    provision: options.development,
    ...(options.notice ? { notice: options.notice } : {}),
  });
  // the KEK stopping and answering again: once per change, on this process's log
  logKekTransitions(active.lease, logger);
  const { config, engine } = active;
  const names = options.names ?? Object.keys(config.responders);
  await active.orClose(() => {
    if (names.length === 0) throw new VeilError('CONFIG_INVALID', `${options.configFile} defines no responders`);
    for (const n of names)
      if (!config.responders[n])
        throw new VeilError('CONFIG_INVALID', `no responder ${n} in ${options.configFile} (active version ${active.holder.get().version})`);
  });
  // opened on first use: only requests naming a data subject of subject-scoped fields read it; refused
  // here, at start, when subject keys would be split between processes or lost with the data dir
  const subjects = await active.orClose(() =>
    lazySubjectKeyStore({
      keystore: active.keystore,
      dataDir: options.dataDir,
      settings: subjectStoreSettings(options.env),
      env: options.env,
      config: config.engine,
    }),
  );
  const verifier = tokenVerifier(active, options);
  // every writer of the data dir's audit log rotates it alike: one keeping fewer files would delete what the configuration keeps
  const audit = options.audit ?? new FileAuditSink(join(options.dataDir, 'audit.log'), config.service.audit);
  // each responder's consumer: when Kafka last answered it (readiness) and whether it stopped for good (liveness:
  // a responder does not re-create its consumer, a restart does)
  const contacts = new Map<string, KafkaContact>();
  const port =
    options.kafka ??
    (await openKafkaPort(streamClient(options.client ?? options.env.VEIL_STREAM_CLIENT), {
      connection,
      clientId: 'veil-unprotect',
      log: (level, message, extra) => logger[level]({ kafka: extra }, message),
    }));
  const kafka = reportingContact(port, contacts, { now: Date.now, contactMs: 15_000, onDown: (groupId, dead) => restarts.restart(groupId, dead) });
  const responders = names.map(
    (name) =>
      new UnprotectResponder({
        name,
        config: config.responders[name]!,
        engine,
        verifier,
        audit,
        kafka,
        log: logger,
        now: options.now,
        tracing,
        configVersion: config.version,
        subjects,
      }),
  );
  const restarts = new ResponderRestarts(responders, logger);
  followEngine(active, responders, names, logger);
  const closers = [() => kafka.disconnect(), () => audit.close(), () => subjects.close(), () => active.close(), () => tracing.shutdown()];
  return respondersService({ responders, logger, restarts, contacts, active, closers });
}

/** tokens verified like the HTTP API's: veil's own issuer (VEIL_BASE_URL or identity.issuer, as `veil serve` uses) and the external providers */
function tokenVerifier(active: ActiveEngine, options: ResponderOptions): CachingVerifier {
  const { config, keystore } = active;
  const issuer = config.identity.issuer ?? options.env.VEIL_BASE_URL ?? 'http://127.0.0.1:8080';
  const signer = new JwtSigner(keystore, config.identity.signingKey);
  return new CachingVerifier(new TokenVerifier({ identity: config.identity, issuer, signer, now: options.now }), { now: options.now });
}

/**
 * A version published elsewhere: its engine answers from now on (a key rotated elsewhere is read
 * by the watch itself); a responder's own settings (topics, group) are read at start only.
 */
function followEngine(active: ActiveEngine, responders: readonly UnprotectResponder[], names: readonly string[], logger: Logger): void {
  const started = active.config;
  active.follow({
    logger,
    onSwap: (version) => {
      const next = active.holder.get().config;
      for (const [i, r] of responders.entries()) {
        if (JSON.stringify(next.responders[names[i]!]) !== JSON.stringify(started.responders[names[i]!]))
          logger.error({ responder: names[i], version }, 'responder: the active version changes its settings; they apply at the next restart');
        r.useEngine(active.holder.get().engine, next.version);
      }
    },
  });
}

interface ResponderParts {
  responders: UnprotectResponder[];
  logger: Logger;
  restarts: ResponderRestarts;
  contacts: ReadonlyMap<string, KafkaContact>;
  active: ActiveEngine;
  /** what stop() closes after the responders and the operations server, in order */
  closers: readonly (() => Promise<void>)[];
}

function respondersService(parts: ResponderParts): Responders {
  const { responders, restarts, contacts, active } = parts;
  let ops: FastifyInstance | undefined;
  const metrics = new Registry();
  collectProcessMetrics(metrics);
  const kafkaStates = () => [...contacts].map(([group, c]) => ({ group, ...c.readiness() }));
  return {
    responders,
    logger: parts.logger,
    async start() {
      await Promise.all(responders.map((r) => r.start()));
      restarts.active = true;
    },
    async listen(port, host) {
      ops = Fastify({ logger: false });
      registerOpsRoutes(ops, {
        // Kafka's absence (a consumer silent, or down and being re-created) is not liveness: /readyz, shown here
        live: () => {
          const shared = active.liveness();
          const notReady = kafkaStates()
            .filter((k) => !k.ready)
            .map(({ group, reason }) => ({ group, reason }));
          const info = { ...shared.info, ...(notReady.length ? { notReady } : {}) };
          return shared.healthy ? { healthy: true, info } : { healthy: false, detail: { ...shared.detail, ...info } };
        },
        ready: () => restarts.active && kafkaStates().every((k) => k.ready),
        metrics,
      });
      await ops.listen({ port, host });
      return ops.server;
    },
    async stop() {
      restarts.active = false;
      await Promise.all(responders.map((r) => r.stop()));
      await ops?.close();
      for (const close of parts.closers) await close();
    },
  };
}
