import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { startWithScript } from './script-env.ts';

/**
 * vitest global setup: tests that need Kafka and a schema registry read KAFKA_BROKERS and
 * SCHEMA_REGISTRY_URL. When they are not given, this starts real ones — with testcontainers
 * where a Docker engine runs, else with scripts/test-env.sh (Kafka and Apicurio Registry from
 * Maven Central, Java 17) — and stops what it started after the run.
 */
export default async function setup(): Promise<() => Promise<void>> {
  if (process.env.KAFKA_BROKERS && process.env.SCHEMA_REGISTRY_URL) return async () => {};
  if (await dockerAvailable()) return startContainers();
  // an environment someone else started (a developer, a bench) is used, and left running
  return startWithScript('scripts/test-env.sh', [Number(process.env.VEIL_TEST_KAFKA_PORT ?? 19092), Number(process.env.VEIL_REGISTRY_PORT ?? 18081)]);
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
    .withExposedPorts(8080)
    .withWaitStrategy(Wait.forHttp('/apis/ccompat/v7/subjects', 8080))
    .start();
  process.env.KAFKA_BROKERS = `${kafka.getHost()}:${kafka.getMappedPort(9093)}`;
  process.env.SCHEMA_REGISTRY_URL = `http://${registry.getHost()}:${registry.getMappedPort(8080)}/apis/ccompat/v7`;
  return async () => {
    await registry.stop();
    await kafka.stop();
    await network.stop();
  };
}
