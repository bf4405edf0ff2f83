import { execFile } from 'node:child_process';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { STREAM_METRIC_NAMES } from '../../src/observability/stream-metric-names.ts';
import { ROOT } from '../helpers/processes.ts';
import { goModuleFile, helmLint, helmTemplate, KEDA_SCALEDOBJECT_CRD, kubeValidate, type K8sObject } from './kube-tools.ts';

// No cluster and no Docker engine here: the chart is linted and rendered with helm (built from the
// Go module proxy by scripts/helm.sh), every rendered object validated against the Kubernetes
// schemas and the KEDA and prometheus-operator CRDs (scripts/kube-validate.py), and what it runs
// compared with docker-compose.yml and the real CLI.

const PRODUCTION = join(ROOT, 'deploy/helm/values-production.yaml');
const VERSION = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
const run = (args: string[]) => promisify(execFile)(join(ROOT, 'bin/veil'), args, { cwd: ROOT, env: { ...process.env, VEIL_LOG_LEVEL: 'warn' } });

interface EnvVar { name: string; value?: string; valueFrom?: { fieldRef?: { fieldPath: string } } }
interface Probe { httpGet: { path: string; port: string } }
interface Container {
  name: string; image: string; args: string[]; env: EnvVar[]; envFrom: { secretRef: { name: string } }[];
  ports?: { name: string; containerPort: number }[]; livenessProbe?: Probe; readinessProbe?: Probe; startupProbe?: Probe;
  securityContext: Record<string, unknown>; volumeMounts: { name: string; mountPath: string; readOnly?: boolean }[];
  lifecycle?: { preStop: { exec: { command: string[] } } };
}
interface PodSpec {
  containers: Container[]; terminationGracePeriodSeconds: number; securityContext: Record<string, unknown>;
  volumes: { name: string; emptyDir?: unknown; configMap?: { name: string } }[];
}
interface Deployment extends K8sObject { spec: { replicas?: number; selector: { matchLabels: Record<string, string> }; template: { metadata: { labels: Record<string, string> }; spec: PodSpec } } }

const kinds = (objects: K8sObject[], kind: string) => objects.filter((o) => o.kind === kind);
const deployments = (objects: K8sObject[]) => kinds(objects, 'Deployment') as Deployment[];
const byComponent = (objects: K8sObject[], component: string) => deployments(objects).filter((d) => d.metadata.labels?.['app.kubernetes.io/component'] === component);
const container = (d: Deployment) => d.spec.template.spec.containers[0]!;
const env = (c: Container, name: string) => c.env.find((e) => e.name === name)?.value;
const matches = (selector: Record<string, string>, labels: Record<string, string>) => Object.entries(selector).every(([k, v]) => labels[k] === v);

/** docker-compose.yml's veil services: the veil image, its entrypoint bin/veil, the command as veil's arguments */
const compose = parse(readFileSync(join(ROOT, 'docker-compose.yml'), 'utf8'), { merge: true }) as { services: Record<string, { image?: string; entrypoint?: string[]; command?: string[] }> };
const composeVeil = Object.values(compose.services).filter((s) => s.image?.startsWith('veil:') && !s.entrypoint);
/** config/example-pipeline.yaml: the configuration the default values run */
const example = parse(readFileSync(join(ROOT, 'config/example-pipeline.yaml'), 'utf8')) as {
  pipelines: Record<string, { source: { topics?: string[] }; groupId?: string }>; responders: Record<string, unknown>;
};

let defaults: K8sObject[];
let defaultsText: string;
let production: K8sObject[];
let productionText: string;
/** defaults with the other switches: gateway on, an inline configuration, the Pods lag metric, PDBs, NetworkPolicies with egress */
let variant: K8sObject[];
let variantText: string;
/** production with brokers that need KEDA to authenticate (a TriggerAuthentication) */
let sasl: K8sObject[];
let saslText: string;

beforeAll(async () => {
  ({ objects: defaults, text: defaultsText } = await helmTemplate());
  ({ objects: production, text: productionText } = await helmTemplate(PRODUCTION));
  ({ objects: variant, text: variantText } = await helmTemplate(undefined, [
    '--set', 'gateway.enabled=true', '--set', 'stream.autoscaling.lagMetricType=Pods', '--set', 'pdb.enabled=true',
    '--set', 'networkPolicy.enabled=true', '--set', 'networkPolicy.egress[0].ports[0].port=9092',
    '--set', 'metrics.serviceMonitor.enabled=true', '--set', 'serve.autoscaling.enabled=true',
    '--set-file', `config.inline=${join(ROOT, 'examples/gateway/gateway.yaml')}`,
  ]));
  ({ objects: sasl, text: saslText } = await helmTemplate(PRODUCTION, ['--set', 'keda.authenticationRef=kafka-sasl']));
}, 1_200_000); // cold: scripts/helm.sh builds helm first (minutes, once per machine; niced, so slower while other tests run)

describe('deploy/helm/veil', () => {
  it.each([['default values', undefined], ['values-production.yaml', PRODUCTION]])('helm lint --strict passes with %s', async (_name, values) => {
    expect(await helmLint(values)).toMatch(/1 chart\(s\) linted, 0 chart\(s\) failed/);
  });

  it.each([
    ['default values', () => defaultsText, () => defaults],
    ['values-production.yaml', () => productionText, () => production],
    ['the other switches', () => variantText, () => variant],
    ['production and a KEDA TriggerAuthentication', () => saslText, () => sasl],
  ])('every object rendered with %s is valid: Kubernetes schemas (strict), KEDA\'s and prometheus-operator\'s CRDs', async (_name, text, objects) => {
    const result = await kubeValidate(text());
    expect(result.errors).toEqual([]);
    // every object was checked against a schema: none passed for want of one
    expect(result.objects).toHaveLength(objects().length);
    for (const o of result.objects) expect(o.schema, `${o.kind} ${o.name}`).toMatch(o.apiVersion.includes('.') && !o.apiVersion.includes('k8s.io') ? /^crd / : /^kubernetes 1\.37 \(strict\)$/);
  }, 300_000);

  it('the validation is not vacuous: a misspelt field is an error, for built-in kinds and for the CRDs', async () => {
    const broken = productionText
      .replace('terminationGracePeriodSeconds:', 'terminationGracePeriod:')
      .replace('minReplicaCount:', 'minReplicaCuont:')
      .replace('    - port: http\n', '    - prot: http\n');
    const { errors } = await kubeValidate(broken);
    expect(errors.map((e) => `${e.kind} ${e.path}`)).toEqual(expect.arrayContaining(['Deployment /spec/template/spec', 'ScaledObject /spec', 'ServiceMonitor /spec/endpoints/0']));
  }, 300_000);

  it('renders what each values file promises', () => {
    const count = (objects: K8sObject[]) => Object.fromEntries([...new Set(objects.map((o) => o.kind))].map((k) => [k, kinds(objects, k).length]));
    // defaults: serve, one protect pipeline with its lag HPA, the responder; the chart's Secrets of settings
    expect(count(defaults)).toEqual({ ServiceAccount: 1, Secret: 2, Service: 2, Deployment: 3, HorizontalPodAutoscaler: 1 });
    // production: the gateway too, KEDA, the CPU HPA of serve, PDBs, NetworkPolicies, ServiceMonitors; Secrets are yours
    expect(count(production)).toEqual({ ServiceAccount: 1, Service: 3, Deployment: 4, HorizontalPodAutoscaler: 1, ScaledObject: 1, PodDisruptionBudget: 4, NetworkPolicy: 4, ServiceMonitor: 3 });
  });
});

describe('the chart runs what docker-compose.yml runs', () => {
  it('the same image: veil:<package.json version>, the chart\'s appVersion (production: the same tag from your registry)', () => {
    const chart = parse(readFileSync(join(ROOT, 'deploy/helm/veil/Chart.yaml'), 'utf8')) as { appVersion: string };
    expect(chart.appVersion).toBe(VERSION);
    expect(new Set(composeVeil.map((s) => s.image))).toEqual(new Set([`veil:${VERSION}`]));
    expect(new Set(deployments(defaults).map((d) => container(d).image))).toEqual(new Set([`veil:${VERSION}`]));
    expect(new Set(deployments(production).map((d) => container(d).image))).toEqual(new Set([`registry.example.com/veil:${VERSION}`]));
  });

  it('the same veil commands with the same flags: each pipeline\'s Deployment adds only --pipeline NAME', () => {
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

  it.each(['defaults', 'production'])('%s: every container\'s arguments are a real veil command with real flags', async (which) => {
    const objects = which === 'defaults' ? defaults : production;
    for (const d of deployments(objects)) {
      const { stdout } = await run([...container(d).args, '--help']);
      expect(stdout, container(d).args.join(' ')).toMatch(/^Usage: veil /);
    }
  }, 60_000);

  it('the default values mirror the configuration they run: each pipeline\'s raw topic and consumer group (groupId, else veil-protect-<name>), the responders', async () => {
    const values = parse(readFileSync(join(ROOT, 'deploy/helm/veil/values.yaml'), 'utf8')) as { config: { file: string }; stream: { pipelines: { name: string; topic: string; groupId: string }[] }; unprotect: { responders: string[] } };
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
  it('production: each pipeline scales on its consumer group\'s lag on the raw topic, with KEDA\'s Kafka scaler', () => {
    const [scaled] = kinds(production, 'ScaledObject') as (K8sObject & { spec: { scaleTargetRef: { name: string; envSourceContainerName: string }; minReplicaCount: number; maxReplicaCount: number; triggers: { type: string; metadata: Record<string, string> }[] } })[];
    const target = deployments(production).find((d) => d.metadata.name === scaled!.spec.scaleTargetRef.name)!;
    expect(container(target).args).toContain('customers');
    expect(target.spec.replicas).toBeUndefined(); // KEDA owns the replica count
    expect(scaled!.spec.triggers).toEqual([{ type: 'kafka', metadata: { bootstrapServersFromEnv: 'KAFKA_BROKERS', consumerGroup: 'veil-protect-customers', topic: 'raw.customers', lagThreshold: '5000', offsetResetPolicy: 'earliest', allowIdleConsumers: 'false' } }]);
    expect([scaled!.spec.minReplicaCount, scaled!.spec.maxReplicaCount]).toEqual([2, 6]);
    // the brokers KEDA reads from the container's environment come from the control-store Secret
    expect(scaled!.spec.scaleTargetRef.envSourceContainerName).toBe(container(target).name);
    expect(container(target).envFrom.map((e) => e.secretRef.name)).toContain('veil-control-store');
  });

  it('the Kafka scaler knows every metadata key the ScaledObject gives it (KEDA\'s kafka_scaler.go, a FromEnv key only where it resolves env)', async () => {
    const source = readFileSync(await goModuleFile({ ...KEDA_SCALEDOBJECT_CRD, path: 'pkg/scalers/kafka_scaler.go' }), 'utf8');
    const params = new Map([...source.matchAll(/keda:"name=(\w+),order=([\w;]+)/g)].map((m) => [m[1]!, m[2]!]));
    expect(params.size).toBeGreaterThan(10);
    const [scaled] = kinds(sasl, 'ScaledObject') as (K8sObject & { spec: { triggers: { metadata: Record<string, string>; authenticationRef?: { name: string } }[] } })[];
    for (const key of Object.keys(scaled!.spec.triggers[0]!.metadata)) {
      const name = key.replace(/FromEnv$/, '');
      expect(params.get(name), key).toMatch(name === key ? /triggerMetadata/ : /resolvedEnv/);
    }
    expect(scaled!.spec.triggers[0]!.authenticationRef).toEqual({ name: 'kafka-sasl' });
  });

  it('without KEDA: an autoscaling/v2 HPA on veil\'s own lag gauge, per pipeline (External by default, Pods on request)', () => {
    type Hpa = K8sObject & { spec: { scaleTargetRef: { name: string }; metrics: { type: string; external?: unknown; pods?: unknown }[] } };
    const lag = (objects: K8sObject[]) => (kinds(objects, 'HorizontalPodAutoscaler') as Hpa[]).filter((h) => h.metadata.labels?.['app.kubernetes.io/component'] === 'stream');
    const metric = { metric: { name: STREAM_METRIC_NAMES.lag, selector: { matchLabels: { pipeline: 'customers' } } }, target: { type: 'AverageValue', averageValue: '1000' } };
    expect(lag(defaults).map((h) => h.spec.metrics)).toEqual([[{ type: 'External', external: metric }]]);
    expect(lag(variant).map((h) => h.spec.metrics)).toEqual([[{ type: 'Pods', pods: metric }]]);
    expect(lag(production)).toEqual([]);
    expect(byComponent(defaults, 'stream').map((d) => d.metadata.name)).toEqual(lag(defaults).map((h) => h.spec.scaleTargetRef.name));
  });

  it('serve scales on CPU; its Deployment leaves the replica count to the HPA', () => {
    const [hpa] = (kinds(production, 'HorizontalPodAutoscaler') as (K8sObject & { spec: { scaleTargetRef: { name: string }; metrics: unknown[] } })[]);
    expect(hpa!.spec.metrics).toEqual([{ type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 70 } } }]);
    const [serve] = byComponent(production, 'serve');
    expect(hpa!.spec.scaleTargetRef.name).toBe(serve!.metadata.name);
    expect(serve!.spec.replicas).toBeUndefined();
  });
});

describe('pods', () => {
  it('probes: serve /healthz and /readyz on VEIL_PORT, stream protect and the responder on their --port, the gateway on its health path', () => {
    for (const objects of [defaults, production]) {
      for (const d of deployments(objects)) {
        const c = container(d);
        const component = d.metadata.labels!['app.kubernetes.io/component'];
        const port = c.ports?.[0];
        const paths = [c.startupProbe!, c.livenessProbe!, c.readinessProbe!].map((p) => `${p.httpGet.port} ${p.httpGet.path}`);
        if (component === 'serve') {
          expect(paths).toEqual(['http /healthz', 'http /healthz', 'http /readyz']);
          expect(String(port!.containerPort)).toBe(env(c, 'VEIL_PORT'));
        } else if (component === 'stream' || component === 'unprotect') {
          expect(paths).toEqual(['metrics /healthz', 'metrics /healthz', 'metrics /readyz']);
          expect(String(port!.containerPort)).toBe(c.args[c.args.indexOf('--port') + 1]);
        } else {
          expect(paths).toEqual(['http /_veil/healthz', 'http /_veil/healthz', 'http /_veil/healthz']);
          expect(String(port!.containerPort)).toBe(c.args[c.args.indexOf('--port') + 1]);
        }
        // the image's HEALTHCHECK, where the process is not serve on VEIL_PORT
        if (component !== 'serve') expect(env(c, 'VEIL_HEALTHCHECK_URL')).toBe(`http://127.0.0.1:${port!.containerPort}${paths[0]!.split(' ')[1]}`);
      }
    }
  });

  it('terminationGracePeriodSeconds covers each process\'s drain', () => {
    for (const d of deployments(production)) {
      const c = container(d);
      const grace = d.spec.template.spec.terminationGracePeriodSeconds;
      const ms = (name: string) => Number(env(c, name));
      const drain = {
        // /readyz 503 while serving, then (with workers) the stop timeout
        serve: () => ms('VEIL_DRAIN_DELAY_MS') + ms('VEIL_STOP_TIMEOUT_MS'),
        // preStop, then exchanges in flight
        gateway: () => Number(c.lifecycle!.preStop.exec.command[1]) * 1000 + ms('VEIL_DRAIN_GRACE_MS'),
        // the batch in flight and leaving the group, then the process's own 2 s exit
        stream: () => ms('VEIL_STOP_TIMEOUT_MS') + 2000,
        unprotect: () => ms('VEIL_STOP_TIMEOUT_MS') + 2000,
      }[d.metadata.labels!['app.kubernetes.io/component']!]!();
      expect(drain, d.metadata.name).toBeGreaterThan(0);
      expect(grace * 1000, d.metadata.name).toBeGreaterThan(drain);
    }
  });

  it('every VEIL_* or Kafka setting the chart sets is one veil reads (but the image\'s healthcheck URL and the pending group.instance.id)', () => {
    const source = readdirSync(join(ROOT, 'src'), { recursive: true, encoding: 'utf8' })
      .filter((f) => f.endsWith('.ts') && statSync(join(ROOT, 'src', f)).isFile())
      .map((f) => readFileSync(join(ROOT, 'src', f), 'utf8')).join('\n');
    const names = new Set([...deployments(production), ...deployments(defaults)].flatMap((d) => container(d).env.map((e) => e.name)));
    const notInSrc = [...names].filter((n) => !source.includes(n)).sort();
    expect(notInSrc).toEqual(['VEIL_HEALTHCHECK_URL', 'VEIL_KAFKA_GROUP_INSTANCE_ID'].filter((n) => !source.includes(n)));
    expect(readFileSync(join(ROOT, 'Dockerfile'), 'utf8')).toContain('process.env.VEIL_HEALTHCHECK_URL');
  });

  it('static group membership: stream protect and the responder get their pod\'s name as VEIL_KAFKA_GROUP_INSTANCE_ID', () => {
    for (const component of ['stream', 'unprotect']) {
      for (const d of byComponent(production, component)) {
        expect(container(d).env.find((e) => e.name === 'VEIL_KAFKA_GROUP_INSTANCE_ID')).toEqual({ name: 'VEIL_KAFKA_GROUP_INSTANCE_ID', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } });
      }
    }
    for (const d of [...byComponent(production, 'serve'), ...byComponent(production, 'gateway')]) expect(env(container(d), 'VEIL_KAFKA_GROUP_INSTANCE_ID')).toBeUndefined();
  });

  it('non-root, read-only root filesystem: writes go to the data dir and /tmp (emptyDirs), as the image expects', () => {
    const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
    const user = /^USER (\d+):(\d+)$/m.exec(dockerfile)!;
    for (const objects of [defaults, production, variant]) {
      for (const d of deployments(objects)) {
        const pod = d.spec.template.spec;
        const c = container(d);
        expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: Number(user[1]), runAsGroup: Number(user[2]) });
        expect(c.securityContext).toMatchObject({ readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } });
        const writable = c.volumeMounts.filter((m) => !m.readOnly).map((m) => m.mountPath).sort();
        expect(writable).toEqual(['/tmp', '/var/lib/veil']);
        expect(env(c, 'VEIL_DATA_DIR')).toBe('/var/lib/veil');
        for (const m of c.volumeMounts.filter((v) => !v.readOnly)) expect(pod.volumes.find((v) => v.name === m.name)!.emptyDir).toBeDefined();
      }
    }
  });

  it('an inline configuration becomes a ConfigMap every process runs (--config /etc/veil/veil.yaml)', () => {
    const [cm] = kinds(variant, 'ConfigMap') as (K8sObject & { data: Record<string, string> })[];
    expect(cm!.data['veil.yaml']).toBe(readFileSync(join(ROOT, 'examples/gateway/gateway.yaml'), 'utf8').trimEnd() + '\n');
    for (const d of deployments(variant)) {
      const c = container(d);
      expect(c.args[c.args.indexOf('--config') + 1]).toBe('/etc/veil/veil.yaml');
      expect(c.volumeMounts).toContainEqual({ name: 'config', mountPath: '/etc/veil', readOnly: true });
      expect(d.spec.template.spec.volumes.find((v) => v.name === 'config')!.configMap!.name).toBe(cm!.metadata.name);
    }
  });
});

describe('secrets, disruption, network, monitoring', () => {
  it('no secret in a values file: KEK credentials and brokers come from Secrets the pods load with envFrom', () => {
    for (const file of ['deploy/helm/veil/values.yaml', 'deploy/helm/values-production.yaml']) {
      const text = readFileSync(join(ROOT, file), 'utf8');
      // named in comments at most, never given a value
      expect(text, file).not.toMatch(/^\s*(AWS_SECRET_ACCESS_KEY|AWS_ACCESS_KEY_ID|AWS_SESSION_TOKEN|VEIL_MASTER_KEY|VEIL_PKCS11_PIN)\s*:/m);
      expect(text, file).not.toMatch(/[0-9a-f]{64}/i);
    }
    // production makes no Secret: it names yours
    expect(kinds(production, 'Secret')).toEqual([]);
    for (const d of deployments(production)) expect(container(d).envFrom.map((e) => e.secretRef.name)).toEqual(['veil-kek', 'veil-control-store']);
    // the defaults' Secrets hold settings only
    const made = kinds(defaults, 'Secret') as (K8sObject & { stringData: Record<string, string> })[];
    expect(made.map((s) => [s.metadata.name, Object.keys(s.stringData).sort()])).toEqual([
      ['veil-kek', ['VEIL_KMS', 'VEIL_KMS_KEY_ID', 'VEIL_KMS_REGION']],
      ['veil-control-store', ['KAFKA_BROKERS', 'VEIL_CONTROL_STORE']],
    ]);
    for (const d of deployments(defaults)) expect(container(d).envFrom.map((e) => e.secretRef.name)).toEqual(made.map((s) => s.metadata.name));
  });

  it('a PodDisruptionBudget for each Deployment, selecting its pods', () => {
    const pdbs = kinds(production, 'PodDisruptionBudget') as (K8sObject & { spec: { maxUnavailable: number; selector: { matchLabels: Record<string, string> } } })[];
    for (const d of deployments(production)) {
      const mine = pdbs.filter((p) => matches(p.spec.selector.matchLabels, d.spec.template.metadata.labels));
      expect(mine.map((p) => p.metadata.name), d.metadata.name).toEqual([d.metadata.name]);
      expect(mine[0]!.spec.maxUnavailable).toBe(1);
    }
    expect(kinds(defaults, 'PodDisruptionBudget')).toEqual([]);
  });

  it('NetworkPolicies: each component takes ingress on its own port only (the responder from monitoring alone); egress DNS and the given rules', () => {
    type Policy = K8sObject & { spec: { podSelector: { matchLabels: Record<string, string> }; policyTypes: string[]; ingress: { ports?: { port: number }[]; from?: unknown[] }[]; egress?: { ports: { port: number; protocol: string }[] }[] } };
    const policies = kinds(production, 'NetworkPolicy') as Policy[];
    for (const d of deployments(production)) {
      const mine = policies.filter((p) => matches(p.spec.podSelector.matchLabels, d.spec.template.metadata.labels));
      expect(mine, d.metadata.name).toHaveLength(1);
      const policy = mine[0]!;
      expect(policy.spec.policyTypes).toEqual(['Ingress', 'Egress']);
      const ports = (container(d).ports ?? []).map((p) => p.containerPort);
      expect(policy.spec.ingress.flatMap((r) => (r.ports ?? []).map((p) => p.port)), d.metadata.name).toEqual(ports);
      for (const rule of policy.spec.ingress) expect(rule.from?.length, d.metadata.name).toBeGreaterThan(0);
      expect(policy.spec.egress![0]!.ports).toEqual([{ port: 53, protocol: 'UDP' }, { port: 53, protocol: 'TCP' }]);
      expect(policy.spec.egress!.flatMap((r) => r.ports.map((p) => p.port))).toEqual(expect.arrayContaining([9092, 443]));
    }
    expect(kinds(defaults, 'NetworkPolicy')).toEqual([]);
  });

  it('ServiceMonitors (metrics.serviceMonitor.enabled) scrape serve, the gateway and every protect pod through Services that exist', () => {
    type Monitor = K8sObject & { spec: { selector: { matchLabels: Record<string, string> }; endpoints: { port: string; path: string }[] } };
    type Service = K8sObject & { spec: { selector: Record<string, string>; ports: { name: string; targetPort: string }[] } };
    const monitors = kinds(production, 'ServiceMonitor') as Monitor[];
    const services = kinds(production, 'Service') as Service[];
    const scraped = monitors.map((m) => {
      const [service] = services.filter((s) => matches(m.spec.selector.matchLabels, s.metadata.labels!));
      const [endpoint] = m.spec.endpoints;
      expect(service!.spec.ports.map((p) => p.name), m.metadata.name).toContain(endpoint!.port);
      const pods = deployments(production).filter((d) => matches(service!.spec.selector, d.spec.template.metadata.labels));
      expect(pods.length, m.metadata.name).toBeGreaterThan(0);
      return `${m.metadata.labels!['app.kubernetes.io/component']} ${endpoint!.path}`;
    });
    expect(scraped.sort()).toEqual(['gateway /_veil/metrics', 'serve /metrics', 'stream /metrics']);
    expect(monitors.every((m) => m.metadata.labels!.release === 'prometheus')).toBe(true);
    expect(kinds(defaults, 'ServiceMonitor')).toEqual([]);
  });
});
