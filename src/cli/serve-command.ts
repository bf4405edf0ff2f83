import cluster from 'node:cluster';
import { parseArgs } from 'node:util';
import { openService, type Service } from '../app/open-service.ts';
import { resolveConfigPath, resolveDataDir } from '../env/index.ts';
import { VeilError } from '../engine/index.ts';
import type { CliIo, Command } from './io.ts';

export const serveHelp = `Usage: veil serve [--config F] [--data-dir D] [--port N] [--host H] [--workers N]

Starts the HTTP service: POST /transform, POST /connect/token, /.well-known/*, /healthz,
/readyz, /metrics, /openapi.json.
  --port     default $VEIL_PORT, else 8080          --host  default $VEIL_HOST, else 127.0.0.1
  --workers  processes sharing the port (default $VEIL_WORKERS, else 1)
Unless VEIL_ENV=production: missing keys are created and a development client veil-dev is
enabled, its secret in <data dir>/dev-client.secret. SIGTERM drains and stops: /readyz turns
503, calls are served for VEIL_DRAIN_DELAY_MS (default 500), then in-flight calls finish. With
--workers, a worker still draining after VEIL_STOP_TIMEOUT_MS (default 25000) is killed and the
service exits 1. VEIL_DB_SOCKET=<path> also listens on a Unix socket for PostgreSQL's triggers
(VEIL_DB_SOCKET_MODE, VEIL_DB_SOCKET_GROUP; one process only: not with --workers above 1).
A start that fails (the port taken, a file unreadable) closes what it opened and exits 1 within
about 7 s, whatever the stores.
`;

export const serveCommand: Command = async (args, io) => {
  const options = serveOptions(args, io);
  if (typeof options === 'number') return options;
  const { port, host, workers } = options;
  const configFile = resolveConfigPath(options.config, io.env, io.cwd);
  const dataDir = resolveDataDir(options.dataDir, io.env, io.cwd);
  const development = io.env.VEIL_ENV !== 'production';
  const baseUrl = io.env.VEIL_BASE_URL ?? `http://${host === '0.0.0.0' || host === '::' ? 'localhost' : host}:${port}`;
  const open = (quiet: boolean) =>
    openService({
      configFile,
      dataDir,
      env: io.env,
      now: io.now,
      baseUrl,
      development,
      notice: quiet ? undefined : (line) => io.stderr(`veil serve: ${line}\n`),
    });

  let opened: Service | undefined;
  try {
    if (workers > 1 && cluster.isPrimary) {
      // prepare keys and the dev client once, then let the workers share the port
      const prepared = (opened = await open(false));
      await prepared.app.close();
      opened = undefined;
      return await superviseWorkers(options, io);
    }
    const service = (opened = await open(cluster.isWorker));
    return await serveUntilStopped(service, options, io);
  } catch (e) {
    io.stderr(`veil serve: ${e instanceof VeilError ? `${e.message} [${e.code}]` : `cannot start: ${(e as Error).message}`}\n`);
    await closeAfterFailedStart(opened);
    return 1;
  }
};

interface ServeOptions {
  config?: string;
  dataDir?: string;
  port: number;
  host: string;
  workers: number;
}

/** The command line and its environment defaults as ServeOptions, or the exit code once help or a usage error was printed. */
function serveOptions(args: string[], io: CliIo): ServeOptions | number {
  let values;
  try {
    ({ values } = parseArgs({
      args,
      options: {
        config: { type: 'string' },
        'data-dir': { type: 'string' },
        port: { type: 'string' },
        host: { type: 'string' },
        workers: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    }));
  } catch (e) {
    io.stderr(`veil serve: ${(e as Error).message}\n`);
    return 2;
  }
  if (values.help) {
    io.stdout(serveHelp);
    return 0;
  }
  const port = Number(values.port ?? io.env.VEIL_PORT ?? 8080);
  const host = values.host ?? io.env.VEIL_HOST ?? '127.0.0.1';
  const workers = Number(values.workers ?? io.env.VEIL_WORKERS ?? 1);
  if (!Number.isInteger(port) || port < 0 || port > 65535 || !Number.isInteger(workers) || workers < 1 || workers > 64) {
    io.stderr('veil serve: --port must be 0-65535 and --workers 1-64\n');
    return 2;
  }
  if (workers > 1 && io.env.VEIL_DB_SOCKET) {
    io.stderr('veil serve: VEIL_DB_SOCKET needs a single process: run it without --workers, or the database over HTTP\n');
    return 2;
  }
  return { config: values.config, dataDir: values['data-dir'], port, host, workers };
}

/** The primary of --workers: forks the workers, passes SIGTERM on, and exits 1 when one had to be killed. */
async function superviseWorkers({ workers, host, port }: ServeOptions, io: CliIo): Promise<number> {
  let running = workers;
  const exited = new Promise<void>((resolve) =>
    cluster.on('exit', () => {
      if (--running === 0) resolve();
    }),
  );
  for (let i = 0; i < workers; i++) cluster.fork();
  io.stderr(`veil serve: ${workers} workers on http://${host}:${port}\n`);
  let late = false;
  const stop = () => {
    for (const w of Object.values(cluster.workers ?? {})) w?.process.kill('SIGTERM');
    // a worker that has not drained within the stop timeout is killed: the orchestrator
    // waiting on this process is never kept past it
    setTimeout(() => {
      late = true;
      for (const w of Object.values(cluster.workers ?? {})) w?.process.kill('SIGKILL');
    }, stopTimeoutMs(io.env)).unref();
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  await exited;
  if (late) io.stderr('veil serve: a worker did not drain within the stop timeout and was killed\n');
  return late ? 1 : 0;
}

/** One process (alone or a worker): listens, then drains and resolves on SIGTERM or SIGINT. */
async function serveUntilStopped(service: Service, { host, port }: ServeOptions, io: CliIo): Promise<number> {
  const isWorker = cluster.isWorker;
  await service.app.listen({ port, host });
  const address = service.app.server.address();
  const bound = typeof address === 'object' && address ? address.port : port;
  if (!isWorker) io.stderr(`veil serve: listening on ${service.tls ? 'https' : 'http'}://${host}:${bound} (issuer ${service.issuer})\n`);
  await new Promise<void>((resolve) => {
    const stop = async () => {
      service.logger.info('draining');
      await service.drain(Number(io.env.VEIL_DRAIN_DELAY_MS ?? 500));
      resolve();
    };
    process.once('SIGTERM', stop);
    process.once('SIGINT', stop);
  });
  // a worker's channel to the primary would keep it alive after the drain
  if (isWorker) cluster.worker?.disconnect();
  return 0;
}

/** How long a failed start may spend closing what it opened, and then waiting for the event loop to empty. */
const FAILED_START_CLOSE_MS = 5000;
const FAILED_START_EXIT_MS = 2000;

/**
 * A start that failed (a port taken, a file unreadable) closes what it opened — the audit log, the
 * subject store, the control store's Kafka client — within a bound, and then the process exits even
 * if a client library still holds a socket or a pending connect (kafkajs retries a connect for
 * minutes): a supervisor must see the failure, not a process that neither serves nor ends (issue 43).
 * The timer is unref'd: a process whose loop empties first exits at once with the code main set.
 */
async function closeAfterFailedStart(service: Service | undefined): Promise<void> {
  if (service) {
    const late = new Promise<void>((r) => setTimeout(r, FAILED_START_CLOSE_MS).unref());
    await Promise.race([service.app.close().catch(() => undefined), late]);
  }
  setTimeout(() => process.exit(), FAILED_START_EXIT_MS).unref();
}

/** How long the primary waits for its workers to drain after SIGTERM (VEIL_STOP_TIMEOUT_MS, default 25 s). */
function stopTimeoutMs(env: NodeJS.ProcessEnv): number {
  const ms = Number(env.VEIL_STOP_TIMEOUT_MS ?? 25_000);
  return Number.isFinite(ms) && ms > 0 ? ms : 25_000;
}
