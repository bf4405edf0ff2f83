import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { STREAM_METRIC_NAMES } from '../../src/observability/stream-metric-names.ts';
import { ROOT } from '../helpers/processes.ts';
import { goModuleFile, helmLint, helmTemplate, KEDA_SCALEDOBJECT_CRD, kubeValidate, type K8sObject } from './kube-tools.ts';
import { byComponent, container, KAFKA_SASL_SSL, kinds, PRODUCTION, renderAll, workloads as deployments } from './chart-objects.ts';

// No cluster and no Docker engine here: the chart is linted and rendered with helm (built from the
// Go module proxy by scripts/helm.sh), every rendered object validated against the Kubernetes
// schemas and the KEDA and prometheus-operator CRDs (scripts/kube-validate.py), and what it runs
// compared with docker-compose.yml and the real CLI.

const VERSION = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
const run = (args: string[]) => promisify(execFile)(join(ROOT, 'bin/veil'), args, { cwd: ROOT, env: { ...process.env, VEIL_LOG_LEVEL: 'warn' } });

/** docker-compose.yml's veil services: the veil image, its entrypoint bin/veil, the command as veil's arguments */
const compose = parse(readFileSync(join(ROOT, 'docker-compose.yml'), 'utf8'), { merge: true }) as {
  services: Record<string, { image?: string; entrypoint?: string[]; command?: string[] }>;
};
const composeVeil = Object.values(compose.services).filter((s) => s.image?.startsWith('veil:') && !s.entrypoint);
/** config/example-pipeline.yaml: the configuration the default values run */
const example = parse(readFileSync(join(ROOT, 'config/example-pipeline.yaml'), 'utf8')) as {
  pipelines: Record<string, { source: { topics?: string[] }; groupId?: string }>;
  responders: Record<string, unknown>;
};

let defaults: K8sObject[];
let defaultsText: string;
let production: K8sObject[];
let productionText: string;
let variant: K8sObject[];
let variantText: string;
let sasl: K8sObject[];
let saslText: string;
let kafkaSecurity: K8sObject[];
let kafkaSecurityText: string;
let stateful: K8sObject[];
let statefulText: string;

beforeAll(async () => {
  const r = await renderAll();
  ({ objects: defaults, text: defaultsText } = r.defaults);
  ({ objects: production, text: productionText } = r.production);
  ({ objects: variant, text: variantText } = r.variant);
  ({ objects: sasl, text: saslText } = r.sasl);
  ({ objects: kafkaSecurity, text: kafkaSecurityText } = r.kafkaSecurity);
  ({ objects: stateful, text: statefulText } = r.stateful);
}, 1_200_000); // cold: scripts/helm.sh builds helm first (minutes, once per machine; niced, so slower while other tests run)

describe('deploy/helm/veil', () => {
  it.each([
    ['default values', []],
    ['values-production.yaml', [PRODUCTION]],
    ['production and values-kafka-sasl-ssl.yaml', [PRODUCTION, KAFKA_SASL_SSL]],
  ])('helm lint --strict passes with %s', async (_name, values) => {
    expect(await helmLint(...values)).toMatch(/1 chart\(s\) linted, 0 chart\(s\) failed/);
  });

  it.each([
    ['default values', () => defaultsText, () => defaults],
    ['values-production.yaml', () => productionText, () => production],
    ['the other switches', () => variantText, () => variant],
    ['production and a KEDA TriggerAuthentication', () => saslText, () => sasl],
    ["production and values-kafka-sasl-ssl.yaml (SASL_SSL, mTLS, the chart's TriggerAuthentication)", () => kafkaSecurityText, () => kafkaSecurity],
    ['production and stream.workload: StatefulSet', () => statefulText, () => stateful],
  ])(
    "every object rendered with %s is valid: Kubernetes schemas (strict), KEDA's and prometheus-operator's CRDs",
    async (_name, text, objects) => {
      const result = await kubeValidate(text());
      expect(result.errors).toEqual([]);
      // every object was checked against a schema: none passed for want of one
      expect(result.objects).toHaveLength(objects().length);
      for (const o of result.objects)
        expect(o.schema, `${o.kind} ${o.name}`).toMatch(
          o.apiVersion.includes('.') && !o.apiVersion.includes('k8s.io') ? /^crd / : /^kubernetes 1\.37 \(strict\)$/,
        );
    },
    300_000,
  );

  it('the validation is not vacuous: a misspelt field is an error, for built-in kinds and for the CRDs', async () => {
    const broken = productionText
      .replace('terminationGracePeriodSeconds:', 'terminationGracePeriod:')
      .replace('minReplicaCount:', 'minReplicaCuont:')
      .replace('    - port: http\n', '    - prot: http\n');
    const { errors } = await kubeValidate(broken);
    expect(errors.map((e) => `${e.kind} ${e.path}`)).toEqual(
      expect.arrayContaining(['Deployment /spec/template/spec', 'ScaledObject /spec', 'ServiceMonitor /spec/endpoints/0']),
    );
  }, 300_000);

  it('renders what each values file promises', () => {
    const count = (objects: K8sObject[]) => Object.fromEntries([...new Set(objects.map((o) => o.kind))].map((k) => [k, kinds(objects, k).length]));
    // defaults: serve, one protect pipeline, the responder with its metrics Service; the chart's Secrets of
    // settings; no autoscaler (an External-metric HPA without a metrics adapter would fail forever)
    expect(count(defaults)).toEqual({ ServiceAccount: 1, Secret: 2, Service: 3, Deployment: 3 });
    // production: the gateway too, KEDA, the CPU HPA of serve, PDBs, NetworkPolicies, ServiceMonitors; Secrets are yours
    expect(count(production)).toEqual({
      ServiceAccount: 1,
      Service: 4,
      Deployment: 4,
      HorizontalPodAutoscaler: 1,
      ScaledObject: 1,
      PodDisruptionBudget: 4,
      NetworkPolicy: 4,
      ServiceMonitor: 4,
    });
    // Kafka security: one TriggerAuthentication more; a StatefulSet: its governing Service
    expect(count(kafkaSecurity)).toEqual({ ...count(production), TriggerAuthentication: 1 });
    expect(count(stateful)).toEqual({ ...count(production), Deployment: 3, StatefulSet: 1, Service: 5 });
  });
});

describe('the chart runs what docker-compose.yml runs', () => {
  it("the same image: veil:<package.json version>, the chart's appVersion (production: the same tag from your registry)", () => {
    const chart = parse(readFileSync(join(ROOT, 'deploy/helm/veil/Chart.yaml'), 'utf8')) as { appVersion: string };
    expect(chart.appVersion).toBe(VERSION);
    expect(new Set(composeVeil.map((s) => s.image))).toEqual(new Set([`veil:${VERSION}`]));
    expect(new Set(deployments(defaults).map((d) => container(d).image))).toEqual(new Set([`veil:${VERSION}`]));
    expect(new Set(deployments(production).map((d) => container(d).image))).toEqual(new Set([`registry.example.com/veil:${VERSION}`]));
  });

  it("the same veil commands with the same flags: each pipeline's Deployment adds only --pipeline NAME", () => {
    const chartArgs = deployments(defaults).map((d) => container(d).args);
    for (const s of composeVeil) {
      const same = chartArgs.find((a) => a.slice(0, s.command!.length).join(' ') === s.command!.join(' '));
      expect(same, s.command!.join(' ')).toBeDefined();
      const added = same!.slice(s.command!.length);
      expect(added, same!.join(' ')).toEqual(s.command![1] === 'protect' ? ['--pipeline', 'customers'] : []);
    }
    // and nothing the compose file does not run, but the gateway (which it does not start)
    const commands = (args: string[][]) => [...new Set(args.map((a) => a.slice(0, a[0] === 'stream' ? 2 : 1).join(' ')))].sort();
    expect(commands(chartArgs)).toEqual(commands(composeVeil.map((s) => s.command!)));
    expect(commands(deployments(production).map((d) => container(d).args))).toEqual(['gateway', 'serve', 'stream protect', 'stream unprotect']);
  });

  it.each(['defaults', 'production'])(
    "%s: every container's arguments are a real veil command with real flags",
    async (which) => {
      const objects = which === 'defaults' ? defaults : production;
      for (const d of deployments(objects)) {
        const { stdout } = await run([...container(d).args, '--help']);
        expect(stdout, container(d).args.join(' ')).toMatch(/^Usage: veil /);
      }
    },
    60_000,
  );

  it("the default values mirror the configuration they run: each pipeline's raw topic and consumer group (groupId, else veil-protect-<name>), the responders", async () => {
    const values = parse(readFileSync(join(ROOT, 'deploy/helm/veil/values.yaml'), 'utf8')) as {
      config: { file: string };
      stream: { pipelines: { name: string; topic: string; groupId: string }[] };
      unprotect: { responders: string[] };
    };
    expect(values.config.file).toBe('config/example-pipeline.yaml');
    expect(values.stream.pipelines.map((p) => p.name)).toEqual(Object.keys(example.pipelines));
    for (const p of values.stream.pipelines) expect(p.topic).toBe(example.pipelines[p.name]!.source.topics![0]);
    expect(values.unprotect.responders).toEqual(Object.keys(example.responders));
    // the default group the chart assumes is the one veil uses
    expect(readFileSync(join(ROOT, 'src/stream/protect/pipeline.ts'), 'utf8')).toContain('this.groupId = c.groupId ?? `veil-protect-${deps.name}`;');
    const { stdout } = await run(['config', 'validate', values.config.file]);
    expect(stdout).toMatch(/valid/i);
  });
});

describe('scaling', () => {
  it("production: each pipeline scales on its consumer group's lag on the raw topic, with KEDA's Kafka scaler", () => {
    const [scaled] = kinds(production, 'ScaledObject') as (K8sObject & {
      spec: {
        scaleTargetRef: { name: string; envSourceContainerName: string };
        minReplicaCount: number;
        maxReplicaCount: number;
        triggers: { type: string; metadata: Record<string, string> }[];
      };
    })[];
    const target = deployments(production).find((d) => d.metadata.name === scaled!.spec.scaleTargetRef.name)!;
    expect(container(target).args).toContain('customers');
    expect(target.spec.replicas).toBeUndefined(); // KEDA owns the replica count
    expect(scaled!.spec.triggers).toEqual([
      {
        type: 'kafka',
        metadata: {
          bootstrapServersFromEnv: 'KAFKA_BROKERS',
          consumerGroup: 'veil-protect-customers',
          topic: 'raw.customers',
          lagThreshold: '5000',
          offsetResetPolicy: 'earliest',
          allowIdleConsumers: 'false',
        },
      },
    ]);
    expect([scaled!.spec.minReplicaCount, scaled!.spec.maxReplicaCount]).toEqual([2, 6]);
    // the brokers KEDA reads from the container's environment come from the control-store Secret
    expect(scaled!.spec.scaleTargetRef.envSourceContainerName).toBe(container(target).name);
    expect(container(target).envFrom.map((e) => e.secretRef.name)).toContain('veil-control-store');
  });

  it("the Kafka scaler knows every metadata key the ScaledObject gives it (KEDA's kafka_scaler.go, a FromEnv key only where it resolves env)", async () => {
    const source = readFileSync(await goModuleFile({ ...KEDA_SCALEDOBJECT_CRD, path: 'pkg/scalers/kafka_scaler.go' }), 'utf8');
    const params = new Map([...source.matchAll(/keda:"name=(\w+),order=([\w;]+)/g)].map((m) => [m[1]!, m[2]!]));
    expect(params.size).toBeGreaterThan(10);
    const [scaled] = kinds(sasl, 'ScaledObject') as (K8sObject & {
      spec: { triggers: { metadata: Record<string, string>; authenticationRef?: { name: string } }[] };
    })[];
    for (const key of Object.keys(scaled!.spec.triggers[0]!.metadata)) {
      const name = key.replace(/FromEnv$/, '');
      expect(params.get(name), key).toMatch(name === key ? /triggerMetadata/ : /resolvedEnv/);
    }
    expect(scaled!.spec.triggers[0]!.authenticationRef).toEqual({ name: 'kafka-sasl' });
  });

  it("without KEDA, only when asked for (stream.autoscaling.enabled): an autoscaling/v2 HPA on veil's own lag gauge, per pipeline (External, or Pods)", async () => {
    type Hpa = K8sObject & { spec: { scaleTargetRef: { kind: string; name: string }; metrics: { type: string; external?: unknown; pods?: unknown }[] } };
    const lag = (objects: K8sObject[]) =>
      (kinds(objects, 'HorizontalPodAutoscaler') as Hpa[]).filter((h) => h.metadata.labels?.['app.kubernetes.io/component'] === 'stream');
    const metric = {
      metric: { name: STREAM_METRIC_NAMES.lag, selector: { matchLabels: { pipeline: 'customers' } } },
      target: { type: 'AverageValue', averageValue: '1000' },
    };
    // the defaults make none: minReplicas pods, and no HPA waiting forever for a metric nobody serves
    expect(lag(defaults)).toEqual([]);
    expect(byComponent(defaults, 'stream').map((d) => d.spec.replicas)).toEqual([1]);
    const { objects: asked } = await helmTemplate(undefined, ['--set', 'stream.autoscaling.enabled=true']);
    expect(lag(asked).map((h) => h.spec.metrics)).toEqual([[{ type: 'External', external: metric }]]);
    expect(byComponent(asked, 'stream').map((d) => [d.metadata.name, d.spec.replicas])).toEqual(lag(asked).map((h) => [h.spec.scaleTargetRef.name, undefined]));
    expect(lag(variant).map((h) => h.spec.metrics)).toEqual([[{ type: 'Pods', pods: metric }]]);
    expect(lag(production)).toEqual([]);
    // a StatefulSet is scaled as one
    const [scaled] = kinds(stateful, 'ScaledObject') as (K8sObject & { spec: { scaleTargetRef: { kind: string; name: string } } })[];
    expect(scaled!.spec.scaleTargetRef).toMatchObject({ kind: 'StatefulSet', name: byComponent(stateful, 'stream')[0]!.metadata.name });
    // KEDA and the lag HPA together would fight over the replicas: refused
    await expect(helmTemplate(PRODUCTION, ['--set', 'stream.autoscaling.enabled=true'])).rejects.toThrow(/keda.enabled and stream.autoscaling.enabled/);
  });

  it('serve scales on CPU; its Deployment leaves the replica count to the HPA', () => {
    const [hpa] = kinds(production, 'HorizontalPodAutoscaler') as (K8sObject & { spec: { scaleTargetRef: { name: string }; metrics: unknown[] } })[];
    expect(hpa!.spec.metrics).toEqual([{ type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 70 } } }]);
    const [serve] = byComponent(production, 'serve');
    expect(hpa!.spec.scaleTargetRef.name).toBe(serve!.metadata.name);
    expect(serve!.spec.replicas).toBeUndefined();
  });
});
