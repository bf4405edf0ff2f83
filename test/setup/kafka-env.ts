import { execFile } from 'node:child_process';
import { connect } from 'node:net';
import { promisify } from 'node:util';

/**
 * vitest global setup: tests that need Kafka and a schema registry read KAFKA_BROKERS and
 * SCHEMA_REGISTRY_URL. When they are not given, this starts real ones — with testcontainers
 * where a Docker engine runs, else with scripts/test-env.sh (Kafka and Apicurio Registry from
 * Maven Central, Java 17) — and stops what it started after the run.
 */
export default async function setup(): Promise<() => Promise<void>> {
  if (process.env.KAFKA_BROKERS && process.env.SCHEMA_REGISTRY_URL) return async () => {};
  if (await dockerAvailable()) return startContainers();
  const script = new URL('../../scripts/test-env.sh', import.meta.url).pathname;
  // an environment someone else started (a developer, a bench) is used, and left running
  const alreadyUp = (await portOpen(Number(process.env.VEIL_KAFKA_PORT ?? 19092))) && (await portOpen(Number(process.env.VEIL_REGISTRY_PORT ?? 18081)));
  const { stdout } = await promisify(execFile)(script, ['start'], { maxBuffer: 1 << 20, timeout: 600_000 });
  for (const line of stdout.split('\n')) {
    const m = /^([A-Z_]+)=(.*)$/.exec(line.trim());
    if (m) process.env[m[1]!] = m[2]!;
  }
  return async () => {
    if (alreadyUp || process.env.VEIL_KEEP_TEST_ENV) return;
    await promisify(execFile)(script, ['stop']).catch(() => undefined);
  };
}

function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ port, host: '127.0.0.1' });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

async function dockerAvailable(): Promise<boolean> {
  if (process.env.VEIL_NO_DOCKER) return false;
  try {
    await promisify(execFile)('docker', ['info'], { timeout: 5000 });
    return true;
  } catch {
    return false;
  }
}

async function startContainers(): Promise<() => Promise<void>> {
  const { KafkaContainer } = await import('@testcontainers/kafka');
  const { GenericContainer, Network, Wait } = await import('testcontainers');
  const network = await new Network().start();
  const kafka = await new KafkaContainer('confluentinc/cp-kafka:7.7.1').withKraft().withNetwork(network).withNetworkAliases('kafka').start();
  const registry = await new GenericContainer('apicurio/apicurio-registry:3.0.9')
    .withExposedPorts(8080).withWaitStrategy(Wait.forHttp('/apis/ccompat/v7/subjects', 8080)).start();
  process.env.KAFKA_BROKERS = `${kafka.getHost()}:${kafka.getMappedPort(9093)}`;
  process.env.SCHEMA_REGISTRY_URL = `http://${registry.getHost()}:${registry.getMappedPort(8080)}/apis/ccompat/v7`;
  return async () => {
    await registry.stop();
    await kafka.stop();
    await network.stop();
  };
}
