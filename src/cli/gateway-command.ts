import { parseArgs } from 'node:util';
import { openGateway } from '../app/open-gateway.ts';
import { resolveConfigPath, resolveDataDir } from '../env/index.ts';
import { VeilError } from '../engine/index.ts';
import type { Command } from './io.ts';

export const gatewayHelp = `Usage: veil gateway --config F [--data-dir D] [--port N] [--host H]

Runs the gateway: a reverse proxy in front of the configuration's gateway.upstream that protects
the request-body fields its routes select before forwarding, and unprotects the response-body
fields they select as far as the caller's bearer token allows.
  --config   the configuration file with a gateway section (default $VEIL_CONFIG)
  --port     default gateway.listen.port          --host  default gateway.listen.host
Tokens: veil's own (issuer identity.issuer, else $VEIL_BASE_URL, else http://127.0.0.1:8080, the
default of 'veil serve'; the signing key is read from the keystore in the data directory) and the
configured external providers. Health: GET <gateway.healthPath> (default /_veil/healthz); Prometheus
metrics: GET <gateway.metricsPath> (default /_veil/metrics).
The data dir's active configuration version runs (the --config file is adopted as a version when it
changed) and is followed hot, with the keystore: versions published and keys rotated elsewhere are
picked up without a restart. gateway.tls serves HTTPS.
SIGTERM: the health path turns 503, the listener closes, exchanges in flight finish (at most
VEIL_DRAIN_GRACE_MS, default 10000), then the process exits 0.
`;

export const gatewayCommand: Command = async (args, io) => {
  let values;
  try {
    ({ values } = parseArgs({
      args,
      options: {
        config: { type: 'string' },
        'data-dir': { type: 'string' },
        port: { type: 'string' },
        host: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    }));
  } catch (e) {
    io.stderr(`veil gateway: ${(e as Error).message}\n`);
    return 2;
  }
  if (values.help) {
    io.stdout(gatewayHelp);
    return 0;
  }
  if (values.config === undefined && !io.env.VEIL_CONFIG) {
    io.stderr('veil gateway: --config is required (a configuration with a gateway section)\n');
    return 2;
  }
  const port = values.port === undefined ? undefined : Number(values.port);
  if (port !== undefined && (!Number.isInteger(port) || port < 0 || port > 65535)) {
    io.stderr('veil gateway: --port must be 0-65535\n');
    return 2;
  }
  try {
    const gateway = await openGateway({
      configFile: resolveConfigPath(values.config, io.env, io.cwd),
      dataDir: resolveDataDir(values['data-dir'], io.env, io.cwd),
      env: io.env,
      now: io.now,
      issuer: io.env.VEIL_BASE_URL ?? 'http://127.0.0.1:8080',
      development: io.env.VEIL_ENV !== 'production',
      notice: (line) => io.stderr(`veil gateway: ${line}\n`),
    });
    const host = values.host ?? gateway.config.listen.host;
    await new Promise<void>((resolve, reject) => {
      gateway.server.once('error', reject);
      gateway.server.listen(port ?? gateway.config.listen.port, host, () => resolve());
    });
    const address = gateway.server.address() as { port: number };
    io.stderr(`veil gateway: listening on http://${host}:${address.port}, upstream ${new URL(gateway.config.upstream).origin}\n`);
    await new Promise<void>((resolve) => {
      const stop = async () => {
        gateway.logger.info('draining');
        await gateway.drain(Number(io.env.VEIL_DRAIN_GRACE_MS ?? 10_000));
        resolve();
      };
      process.once('SIGTERM', stop);
      process.once('SIGINT', stop);
    });
    return 0;
  } catch (e) {
    io.stderr(`veil gateway: ${e instanceof VeilError ? `${e.message} [${e.code}]` : `cannot start: ${(e as Error).message}`}\n`);
    return 1;
  }
};
