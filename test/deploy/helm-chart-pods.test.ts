import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/processes.ts';
import { helmTemplate, type K8sObject } from './kube-tools.ts';
import {
  byComponent,
  container,
  env,
  kinds,
  matches,
  renderAll,
  workloads as deployments,
  type Service,
  type Workload as Deployment,
} from './chart-objects.ts';

// The chart's pods as rendered (helm template, test/deploy/helm-chart.test.ts validates the objects):
// probes, grace periods, group membership, the read-only root, Secrets, disruption budgets, network
// policies and monitoring, checked against the Deployments and StatefulSets they serve.

let defaults: K8sObject[];
let production: K8sObject[];
let variant: K8sObject[];
let kafkaSecurity: K8sObject[];
let stateful: K8sObject[];

beforeAll(async () => {
  const r = await renderAll();
  ({
    defaults: { objects: defaults },
    production: { objects: production },
    variant: { objects: variant },
    kafkaSecurity: { objects: kafkaSecurity },
    stateful: { objects: stateful },
  } = r);
}, 1_200_000); // cold: scripts/helm.sh builds helm first

describe('pods', () => {
  it('probes: serve /healthz and /readyz on VEIL_PORT, stream protect and the responder on their --port, the gateway on its health path', () => {
    for (const objects of [defaults, production, stateful]) {
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

  it("terminationGracePeriodSeconds covers each process's drain", () => {
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

  it("every VEIL_* or Kafka setting the chart sets is one veil reads (but the image's healthcheck URL), or a librdkafka property by the environment contract", () => {
    const source = readdirSync(join(ROOT, 'src'), { recursive: true, encoding: 'utf8' })
      .filter((f) => f.endsWith('.ts') && statSync(join(ROOT, 'src', f)).isFile())
      .map((f) => readFileSync(join(ROOT, 'src', f), 'utf8'))
      .join('\n');
    const names = new Set([production, defaults, kafkaSecurity, stateful].flatMap((o) => deployments(o)).flatMap((d) => container(d).env.map((e) => e.name)));
    // VEIL_KAFKA_<PROPERTY> (and its _FILE form) and SCHEMA_REGISTRY_<NAME> are read by pattern, not by name
    const byContract = /^(VEIL_KAFKA_[A-Z0-9_]+|SCHEMA_REGISTRY_(SSL_CA|SSL_CERTIFICATE|SSL_KEY)_LOCATION)$/;
    const notInSrc = [...names].filter((n) => !source.includes(n) && !byContract.test(n)).sort();
    expect(notInSrc).toEqual(['VEIL_HEALTHCHECK_URL'].filter((n) => !source.includes(n)));
    expect([...names].filter((n) => byContract.test(n)).sort()).toEqual([
      'SCHEMA_REGISTRY_SSL_CA_LOCATION',
      'VEIL_KAFKA_GROUP_INSTANCE_ID',
      'VEIL_KAFKA_SASL_MECHANISM',
      'VEIL_KAFKA_SASL_PASSWORD_FILE',
      'VEIL_KAFKA_SASL_USERNAME',
      'VEIL_KAFKA_SECURITY_PROTOCOL',
      'VEIL_KAFKA_SESSION_TIMEOUT_MS',
      'VEIL_KAFKA_SSL_CA_LOCATION',
      'VEIL_KAFKA_SSL_CERTIFICATE_LOCATION',
      'VEIL_KAFKA_SSL_KEY_LOCATION',
    ]);
    expect(readFileSync(join(ROOT, 'Dockerfile'), 'utf8')).toContain('process.env.VEIL_HEALTHCHECK_URL');
  });

  it("group membership: dynamic on a Deployment (no group.instance.id); static, from the pod's stable name, only on a StatefulSet with its headless Service", async () => {
    const instanceId = (d: Deployment) => container(d).env.find((e) => e.name === 'VEIL_KAFKA_GROUP_INSTANCE_ID');
    // a Deployment's pods are replaced under new names: a static member would hold its partitions until its session ends
    for (const objects of [defaults, production, kafkaSecurity]) for (const d of deployments(objects)) expect(instanceId(d), d.metadata.name).toBeUndefined();
    const [set] = kinds(stateful, 'StatefulSet') as Deployment[];
    expect(set!.metadata.labels!['app.kubernetes.io/component']).toBe('stream');
    expect(instanceId(set!)).toEqual({ name: 'VEIL_KAFKA_GROUP_INSTANCE_ID', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } });
    expect(set!.spec).toMatchObject({ podManagementPolicy: 'Parallel', updateStrategy: { type: 'RollingUpdate' } });
    const governing = (kinds(stateful, 'Service') as Service[]).find((svc) => svc.metadata.name === set!.spec.serviceName)!;
    expect(governing.spec).toMatchObject({ clusterIP: 'None', selector: set!.spec.selector.matchLabels });
    // the responder stays a Deployment with dynamic membership either way
    for (const d of byComponent(stateful, 'unprotect')) expect([d.kind, instanceId(d)]).toEqual(['Deployment', undefined]);
    // the values that meant otherwise before are refused, not ignored
    await expect(helmTemplate(undefined, ['--set', 'stream.staticMembership=true'])).rejects.toThrow(/stream.workload: StatefulSet/);
    await expect(helmTemplate(undefined, ['--set', 'stream.workload=DaemonSet'])).rejects.toThrow(/Deployment or StatefulSet/);
  });

  it('non-root, read-only root filesystem: writes go to the data dir and /tmp (emptyDirs, VEIL_DATA_DIR_EPHEMERAL=true), as the image expects', () => {
    const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
    const user = /^USER (\d+):(\d+)$/m.exec(dockerfile)!;
    for (const objects of [defaults, production, variant, kafkaSecurity, stateful]) {
      for (const d of deployments(objects)) {
        const pod = d.spec.template.spec;
        const c = container(d);
        expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: Number(user[1]), runAsGroup: Number(user[2]) });
        expect(c.securityContext).toMatchObject({ readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } });
        const writable = c.volumeMounts
          .filter((m) => !m.readOnly)
          .map((m) => m.mountPath)
          .sort();
        expect(writable).toEqual(['/tmp', '/var/lib/veil']);
        expect(env(c, 'VEIL_DATA_DIR')).toBe('/var/lib/veil');
        expect(env(c, 'VEIL_DATA_DIR_EPHEMERAL')).toBe('true');
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
  it("no secret in a values file: KEK credentials, brokers, the registry's URL come from Secrets the pods load with envFrom", async () => {
    for (const file of ['deploy/helm/veil/values.yaml', 'deploy/helm/values-production.yaml', 'deploy/helm/values-kafka-sasl-ssl.yaml']) {
      const text = readFileSync(join(ROOT, file), 'utf8');
      // named in comments at most, never given a value
      expect(text, file).not.toMatch(
        /^\s*(AWS_SECRET_ACCESS_KEY|AWS_ACCESS_KEY_ID|AWS_SESSION_TOKEN|VEIL_MASTER_KEY|VEIL_PKCS11_PIN|SASL_PASSWORD|SSL_KEY_PASSWORD|SASL_OAUTHBEARER_CLIENT_SECRET|schemaRegistryUrl)\s*:/m,
      );
      expect(text, file).not.toMatch(/[0-9a-f]{64}/i);
    }
    // production makes no Secret: it names yours; the protect pods also load the registry's
    expect(kinds(production, 'Secret')).toEqual([]);
    for (const d of deployments(production)) {
      expect(
        container(d).envFrom.map((e) => e.secretRef.name),
        d.metadata.name,
      ).toEqual(['veil-kek', 'veil-control-store', ...(d.metadata.labels!['app.kubernetes.io/component'] === 'stream' ? ['veil-schema-registry'] : [])]);
    }
    // SCHEMA_REGISTRY_URL may carry credentials: never a plain value (and the old value that gave one is refused)
    for (const objects of [defaults, production, kafkaSecurity, variant])
      for (const d of deployments(objects)) expect(env(container(d), 'SCHEMA_REGISTRY_URL')).toBeUndefined();
    await expect(helmTemplate(undefined, ['--set', 'stream.schemaRegistryUrl=http://user:secret@registry:8081'])).rejects.toThrow(
      /comes from a Secret \(schemaRegistry.existingSecret\)/,
    );
    // the defaults' Secrets hold settings only
    const made = kinds(defaults, 'Secret') as (K8sObject & { stringData: Record<string, string> })[];
    expect(made.map((s) => [s.metadata.name, Object.keys(s.stringData).sort()])).toEqual([
      ['veil-kek', ['VEIL_KMS', 'VEIL_KMS_KEY_ID', 'VEIL_KMS_REGION']],
      ['veil-control-store', ['KAFKA_BROKERS', 'VEIL_CONTROL_STORE']],
    ]);
    for (const d of deployments(defaults)) expect(container(d).envFrom.map((e) => e.secretRef.name)).toEqual(made.map((s) => s.metadata.name));
  });

  it('a PodDisruptionBudget for each Deployment and StatefulSet, selecting its pods', () => {
    for (const objects of [production, stateful]) {
      const pdbs = kinds(objects, 'PodDisruptionBudget') as (K8sObject & {
        spec: { maxUnavailable: number; selector: { matchLabels: Record<string, string> } };
      })[];
      for (const d of deployments(objects)) {
        const mine = pdbs.filter((p) => matches(p.spec.selector.matchLabels, d.spec.template.metadata.labels));
        expect(
          mine.map((p) => p.metadata.name),
          d.metadata.name,
        ).toEqual([d.metadata.name]);
        expect(mine[0]!.spec.maxUnavailable).toBe(1);
      }
    }
    expect(kinds(defaults, 'PodDisruptionBudget')).toEqual([]);
  });

  it('NetworkPolicies: each component takes ingress on its own port only (the responder from monitoring alone); egress DNS and the given rules (production: Kafka, the KMS, OTLP)', () => {
    type Policy = K8sObject & {
      spec: {
        podSelector: { matchLabels: Record<string, string> };
        policyTypes: string[];
        ingress: { ports?: { port: number }[]; from?: unknown[] }[];
        egress?: { ports: { port: number; protocol: string }[] }[];
      };
    };
    const policies = kinds(production, 'NetworkPolicy') as Policy[];
    for (const d of deployments(production)) {
      const mine = policies.filter((p) => matches(p.spec.podSelector.matchLabels, d.spec.template.metadata.labels));
      expect(mine, d.metadata.name).toHaveLength(1);
      const policy = mine[0]!;
      expect(policy.spec.policyTypes).toEqual(['Ingress', 'Egress']);
      const ports = (container(d).ports ?? []).map((p) => p.containerPort);
      expect(
        policy.spec.ingress.flatMap((r) => (r.ports ?? []).map((p) => p.port)),
        d.metadata.name,
      ).toEqual(ports);
      for (const rule of policy.spec.ingress) expect(rule.from?.length, d.metadata.name).toBeGreaterThan(0);
      expect(policy.spec.egress![0]!.ports).toEqual([
        { port: 53, protocol: 'UDP' },
        { port: 53, protocol: 'TCP' },
      ]);
      expect(policy.spec.egress!.flatMap((r) => r.ports.map((p) => p.port))).toEqual(expect.arrayContaining([9092, 443, 4317, 4318]));
    }
    expect(kinds(defaults, 'NetworkPolicy')).toEqual([]);
  });

  it('ServiceMonitors (metrics.serviceMonitor.enabled) scrape serve, the gateway, every protect pod and the responder through Services that exist', () => {
    type Monitor = K8sObject & { spec: { selector: { matchLabels: Record<string, string> }; endpoints: { port: string; path: string }[] } };
    const monitors = kinds(production, 'ServiceMonitor') as Monitor[];
    const services = kinds(production, 'Service') as Service[];
    const scraped = monitors.map((m) => {
      const [service] = services.filter((s) => matches(m.spec.selector.matchLabels, s.metadata.labels!));
      const [endpoint] = m.spec.endpoints;
      expect(
        service!.spec.ports.map((p) => p.name),
        m.metadata.name,
      ).toContain(endpoint!.port);
      const pods = deployments(production).filter((d) => matches(service!.spec.selector, d.spec.template.metadata.labels));
      expect(pods.length, m.metadata.name).toBeGreaterThan(0);
      return `${m.metadata.labels!['app.kubernetes.io/component']} ${endpoint!.path}`;
    });
    expect(scraped.sort()).toEqual(['gateway /_veil/metrics', 'serve /metrics', 'stream /metrics', 'unprotect /metrics']);
    // a stream pod Kafka does not answer is not ready: its metrics Services keep listing it
    for (const svc of services.filter((x) => ['stream', 'unprotect'].includes(x.metadata.labels!['app.kubernetes.io/component']!)))
      expect(svc.spec.publishNotReadyAddresses, svc.metadata.name).toBe(true);
    expect(services.find((x) => x.metadata.labels!['app.kubernetes.io/component'] === 'serve')!.spec.publishNotReadyAddresses).toBeUndefined();
    expect(monitors.every((m) => m.metadata.labels!.release === 'prometheus')).toBe(true);
    expect(kinds(defaults, 'ServiceMonitor')).toEqual([]);
  });
});
