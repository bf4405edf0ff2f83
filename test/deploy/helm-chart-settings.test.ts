import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { goModuleFile, helmTemplate, KEDA_SCALEDOBJECT_CRD, type K8sObject } from './kube-tools.ts';
import { byComponent, componentOf, container, env, kinds, PRODUCTION, renderAll, workloads, type Workload } from './chart-objects.ts';

// Issue 40's settings as the rendered pods get them: extraEnv that overrides, extra volumes for
// every component, the image by digest, Kafka's SASL/TLS and the registry's credentials from your
// Secrets (values-kafka-sasl-ssl.yaml), KEDA's credentials, and the subject-key store's settings.

let defaults: K8sObject[];
let production: K8sObject[];
let kafkaSecurity: K8sObject[];

beforeAll(async () => {
  ({
    defaults: { objects: defaults },
    production: { objects: production },
    kafkaSecurity: { objects: kafkaSecurity },
  } = await renderAll());
}, 1_200_000); // cold: scripts/helm.sh builds helm first

const names = (d: Workload) => container(d).env.map((e) => e.name);
const mountedAt = (d: Workload, path: string) => container(d).volumeMounts.find((m) => path.startsWith(`${m.mountPath}/`));

describe('extraEnv, extraVolumes, the image', () => {
  it("an extraEnv entry the chart also sets replaces the chart's (one entry per name); a component's own wins over the global one", async () => {
    const { objects } = await helmTemplate(PRODUCTION, [
      '--set',
      'extraEnv[0].name=VEIL_LOG_LEVEL',
      '--set',
      'extraEnv[0].value=debug',
      '--set',
      'extraEnv[1].name=OTEL_EXPORTER_OTLP_ENDPOINT',
      '--set',
      'extraEnv[1].value=http://otel-collector.monitoring:4318',
      '--set',
      'serve.extraEnv[0].name=VEIL_LOG_LEVEL',
      '--set',
      'serve.extraEnv[0].value=warn',
      '--set',
      'stream.extraEnv[0].name=VEIL_KAFKA_SESSION_TIMEOUT_MS',
      '--set',
      'stream.extraEnv[0].value=45000',
    ]);
    for (const d of workloads(objects)) {
      // no name twice: with two, Kubernetes keeps the later, which was the chart's
      expect(names(d).length, d.metadata.name).toBe(new Set(names(d)).size);
      expect(env(container(d), 'VEIL_LOG_LEVEL'), d.metadata.name).toBe(componentOf(d) === 'serve' ? 'warn' : 'debug');
      expect(env(container(d), 'OTEL_EXPORTER_OTLP_ENDPOINT')).toBe('http://otel-collector.monitoring:4318');
    }
    for (const d of byComponent(objects, 'stream')) expect(env(container(d), 'VEIL_KAFKA_SESSION_TIMEOUT_MS')).toBe('45000');
    for (const d of byComponent(objects, 'unprotect')) expect(env(container(d), 'VEIL_KAFKA_SESSION_TIMEOUT_MS')).toBe('30000');
    // and without extraEnv, every name once too
    for (const d of [...workloads(defaults), ...workloads(kafkaSecurity)]) expect(names(d).length, d.metadata.name).toBe(new Set(names(d)).size);
  });

  it("extraVolumes and extraVolumeMounts reach every component (a CA bundle), and a component's own only it (a PKCS#11 module for serve)", async () => {
    const { objects } = await helmTemplate(PRODUCTION, [
      '--set',
      'extraVolumes[0].name=ca-bundle',
      '--set',
      'extraVolumes[0].configMap.name=corporate-ca',
      '--set',
      'extraVolumeMounts[0].name=ca-bundle',
      '--set',
      'extraVolumeMounts[0].mountPath=/etc/ssl/corporate',
      '--set',
      'extraVolumeMounts[0].readOnly=true',
      '--set',
      'serve.extraVolumes[0].name=pkcs11',
      '--set',
      'serve.extraVolumes[0].hostPath.path=/usr/lib/softhsm',
      '--set',
      'serve.extraVolumeMounts[0].name=pkcs11',
      '--set',
      'serve.extraVolumeMounts[0].mountPath=/opt/pkcs11',
      '--set',
      'serve.extraVolumeMounts[0].readOnly=true',
    ]);
    expect(workloads(objects).map(componentOf).sort()).toEqual(['gateway', 'serve', 'stream', 'unprotect']);
    for (const d of workloads(objects)) {
      const volumes = d.spec.template.spec.volumes.map((v) => v.name);
      const mounts = container(d).volumeMounts.map((m) => `${m.name} ${m.mountPath} ${m.readOnly}`);
      expect(volumes).toContain('ca-bundle');
      expect(mounts).toContain('ca-bundle /etc/ssl/corporate true');
      expect(volumes.includes('pkcs11'), d.metadata.name).toBe(componentOf(d) === 'serve');
      expect(mounts.includes('pkcs11 /opt/pkcs11 true'), d.metadata.name).toBe(componentOf(d) === 'serve');
    }
  });

  it('image.digest pins every container to repository@sha256:…; a malformed digest is refused', async () => {
    const digest = `sha256:${'0123456789abcdef'.repeat(4)}`;
    const { objects } = await helmTemplate(PRODUCTION, ['--set', `image.digest=${digest}`]);
    expect(new Set(workloads(objects).map((d) => container(d).image))).toEqual(new Set([`registry.example.com/veil@${digest}`]));
    await expect(helmTemplate(PRODUCTION, ['--set', 'image.digest=sha256:abc'])).rejects.toThrow(/image.digest must be sha256/);
  });
});

describe('Kafka and the registry behind SASL_SSL and mTLS (values-kafka-sasl-ssl.yaml)', () => {
  it('every container gets the librdkafka settings, the username from the Secret, and every file a setting names under a read-only mount of a Secret', () => {
    for (const d of workloads(kafkaSecurity)) {
      const c = container(d);
      expect([env(c, 'VEIL_KAFKA_SECURITY_PROTOCOL'), env(c, 'VEIL_KAFKA_SASL_MECHANISM')], d.metadata.name).toEqual(['SASL_SSL', 'SCRAM-SHA-512']);
      expect(c.env.find((e) => e.name === 'VEIL_KAFKA_SASL_USERNAME')).toEqual({
        name: 'VEIL_KAFKA_SASL_USERNAME',
        valueFrom: { secretKeyRef: { name: 'veil-kafka-sasl', key: 'username' } },
      });
      // the password only as a file: no variable holds it
      expect(names(d).filter((n) => /PASSWORD$/.test(n))).toEqual([]);
      const files = c.env.filter((e) => /(_LOCATION|_FILE)$/.test(e.name)).map((e) => e.value!);
      expect(files.length).toBeGreaterThanOrEqual(componentOf(d) === 'stream' ? 5 : 4);
      for (const file of files) {
        const mount = mountedAt(d, file);
        expect(mount, `${d.metadata.name} ${file}`).toMatchObject({ readOnly: true });
        expect(d.spec.template.spec.volumes.find((v) => v.name === mount!.name)!.secret, file).toBeDefined();
      }
    }
  });

  it("the registry's URL and credentials come from its Secret, for the protect pods only; its CA from a mounted file", () => {
    for (const d of workloads(kafkaSecurity)) {
      const fromRegistry = container(d).envFrom.some((e) => e.secretRef.name === 'veil-schema-registry');
      expect(fromRegistry, d.metadata.name).toBe(componentOf(d) === 'stream');
      expect(env(container(d), 'SCHEMA_REGISTRY_URL')).toBeUndefined();
    }
    for (const d of byComponent(kafkaSecurity, 'stream'))
      expect(env(container(d), 'SCHEMA_REGISTRY_SSL_CA_LOCATION')).toBe('/var/run/secrets/kafka-tls/ca.crt');
  });

  it("KEDA reads the lag over SASL_SSL too: the chart's TriggerAuthentication gives parameters the Kafka scaler takes as credentials, from the Secrets the pods mount", async () => {
    const source = readFileSync(await goModuleFile({ ...KEDA_SCALEDOBJECT_CRD, path: 'pkg/scalers/kafka_scaler.go' }), 'utf8');
    const params = new Map([...source.matchAll(/keda:"name=(\w+),order=([\w;]+)/g)].map((m) => [m[1]!, m[2]!]));
    const [auth] = kinds(kafkaSecurity, 'TriggerAuthentication') as (K8sObject & {
      spec: { secretTargetRef: { parameter: string; name: string; key: string }[] };
    })[];
    const [scaled] = kinds(kafkaSecurity, 'ScaledObject') as (K8sObject & {
      spec: { triggers: { metadata: Record<string, string>; authenticationRef?: { name: string } }[] };
    })[];
    expect(scaled!.spec.triggers[0]!.authenticationRef).toEqual({ name: auth!.metadata.name });
    expect(auth!.spec.secretTargetRef.map((r) => r.parameter).sort()).toEqual(['ca', 'cert', 'key', 'password', 'username']);
    for (const r of auth!.spec.secretTargetRef) expect(params.get(r.parameter), r.parameter).toMatch(/authParams/);
    expect(scaled!.spec.triggers[0]!.metadata).toMatchObject({ sasl: 'scram_sha512', tls: 'enable' });
    const [protect] = byComponent(kafkaSecurity, 'stream');
    const mountedSecrets = new Set(protect!.spec.template.spec.volumes.flatMap((v) => (v.secret ? [v.secret.secretName] : [])));
    for (const r of auth!.spec.secretTargetRef) expect(mountedSecrets.has(r.name), r.name).toBe(true);
    // without KEDA, no TriggerAuthentication
    expect(kinds(defaults, 'TriggerAuthentication')).toEqual([]);
  });
});

describe('subject keys', () => {
  it('every container shares subject keys through Kafka (VEIL_SUBJECT_STORE=kafka) on an ephemeral data dir; subjectStore "" leaves it to follow the control store', async () => {
    for (const d of [...workloads(defaults), ...workloads(production)]) {
      expect([env(container(d), 'VEIL_SUBJECT_STORE'), env(container(d), 'VEIL_DATA_DIR_EPHEMERAL')], d.metadata.name).toEqual(['kafka', 'true']);
    }
    const { objects } = await helmTemplate(undefined, ['--set', 'subjectStore=']);
    for (const d of workloads(objects)) expect(names(d)).not.toContain('VEIL_SUBJECT_STORE');
  });
});
