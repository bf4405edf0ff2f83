import { join } from 'node:path';
import { ROOT } from '../helpers/processes.ts';
import { helmTemplate, type K8sObject } from './kube-tools.ts';

/** The chart's rendered objects as the deployment tests read them: workloads, their one container, its env. */

export const PRODUCTION = join(ROOT, 'deploy/helm/values-production.yaml');
export const KAFKA_SASL_SSL = join(ROOT, 'deploy/helm/values-kafka-sasl-ssl.yaml');

export interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { fieldRef?: { fieldPath: string }; secretKeyRef?: { name: string; key: string } };
}
export interface Probe {
  httpGet: { path: string; port: string };
}
export interface Container {
  name: string;
  image: string;
  args: string[];
  env: EnvVar[];
  envFrom: { secretRef: { name: string } }[];
  ports?: { name: string; containerPort: number }[];
  livenessProbe?: Probe;
  readinessProbe?: Probe;
  startupProbe?: Probe;
  securityContext: Record<string, unknown>;
  volumeMounts: { name: string; mountPath: string; readOnly?: boolean }[];
  lifecycle?: { preStop: { exec: { command: string[] } } };
}
export interface PodSpec {
  containers: Container[];
  terminationGracePeriodSeconds: number;
  securityContext: Record<string, unknown>;
  volumes: { name: string; emptyDir?: unknown; configMap?: { name: string }; secret?: { secretName: string } }[];
}
/** a Deployment or a StatefulSet (stream.workload) */
export interface Workload extends K8sObject {
  spec: {
    replicas?: number;
    serviceName?: string;
    selector: { matchLabels: Record<string, string> };
    template: { metadata: { labels: Record<string, string> }; spec: PodSpec };
  };
}
export type Service = K8sObject & {
  spec: {
    clusterIP?: string;
    publishNotReadyAddresses?: boolean;
    selector: Record<string, string>;
    ports: { name: string; port: number; targetPort: string }[];
  };
};

export const kinds = (objects: K8sObject[], kind: string) => objects.filter((o) => o.kind === kind);
/** every Deployment and StatefulSet */
export const workloads = (objects: K8sObject[]) => objects.filter((o) => o.kind === 'Deployment' || o.kind === 'StatefulSet') as Workload[];
export const componentOf = (o: K8sObject) => o.metadata.labels?.['app.kubernetes.io/component'];
export const byComponent = (objects: K8sObject[], component: string) => workloads(objects).filter((d) => componentOf(d) === component);
export const container = (d: Workload) => d.spec.template.spec.containers[0]!;
export const env = (c: Container, name: string) => c.env.find((e) => e.name === name)?.value;
export const matches = (selector: Record<string, string>, labels: Record<string, string>) => Object.entries(selector).every(([k, v]) => labels[k] === v);

export interface Render {
  text: string;
  objects: K8sObject[];
}
/** The value sets the chart tests render, each once per test file. */
export interface Renders {
  defaults: Render;
  production: Render;
  /** defaults with the other switches: gateway on, an inline configuration, the lag HPA on the Pods metric, PDBs, NetworkPolicies with egress */
  variant: Render;
  /** production with brokers that need KEDA to authenticate (a TriggerAuthentication of yours) */
  sasl: Render;
  /** production with values-kafka-sasl-ssl.yaml: SASL_SSL, mTLS, the registry's Secret, the chart's TriggerAuthentication */
  kafkaSecurity: Render;
  /** production with stream.workload: StatefulSet */
  stateful: Render;
}

/** Renders every set (cold: scripts/helm.sh builds helm first, minutes once per machine). */
export async function renderAll(): Promise<Renders> {
  return {
    defaults: await helmTemplate(),
    production: await helmTemplate(PRODUCTION),
    variant: await helmTemplate(undefined, [
      '--set',
      'gateway.enabled=true',
      '--set',
      'stream.autoscaling.enabled=true',
      '--set',
      'stream.autoscaling.lagMetricType=Pods',
      '--set',
      'pdb.enabled=true',
      '--set',
      'networkPolicy.enabled=true',
      '--set',
      'networkPolicy.egress[0].ports[0].port=9092',
      '--set',
      'metrics.serviceMonitor.enabled=true',
      '--set',
      'serve.autoscaling.enabled=true',
      '--set-file',
      `config.inline=${join(ROOT, 'examples/gateway/gateway.yaml')}`,
    ]),
    sasl: await helmTemplate(PRODUCTION, ['--set', 'keda.authenticationRef=kafka-sasl']),
    kafkaSecurity: await helmTemplate(PRODUCTION, ['-f', KAFKA_SASL_SSL]),
    stateful: await helmTemplate(PRODUCTION, ['--set', 'stream.workload=StatefulSet']),
  };
}
