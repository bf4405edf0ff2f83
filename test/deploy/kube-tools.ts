import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { promisify } from 'node:util';
import { parseAllDocuments } from 'yaml';
import { ROOT } from '../helpers/processes.ts';
import { pythonVenv } from '../helpers/python-venv.ts';

/**
 * The offline tools of the deployment tests, each fetched once from a package registry into a
 * cache and reused: helm (built from the Go module proxy by scripts/helm.sh into ~/.cache/veil/bin),
 * the CRDs' and the Compose specification's schemas (Go modules, `go mod download` into the module
 * cache), and kubernetes-validate and BuildKit's Dockerfile parser (PyPI, a venv under ~/.cache/veil).
 */
const exec = promisify(execFile);

/** The Kubernetes version the chart is rendered for and validated against (helm v3.22 is built on client-go 0.37). */
export const KUBE_VERSION = '1.37.0';
/** The Python of the venv ~/.cache/veil/deploy-tools-venv (made on first use). */
export async function deployToolsPython(): Promise<string> {
  return join(await pythonVenv('deploy-tools'), 'bin/python');
}

interface GoFile {
  module: string;
  version: string;
  path: string;
}
export const KEDA_SCALEDOBJECT_CRD: GoFile = { module: 'github.com/kedacore/keda/v2', version: 'v2.21.0', path: 'config/crd/bases/keda.sh_scaledobjects.yaml' };
export const KEDA_TRIGGERAUTHENTICATION_CRD: GoFile = { ...KEDA_SCALEDOBJECT_CRD, path: 'config/crd/bases/keda.sh_triggerauthentications.yaml' };
export const SERVICEMONITOR_CRD: GoFile = {
  module: 'github.com/prometheus-operator/prometheus-operator',
  version: 'v0.85.0',
  path: 'example/prometheus-operator-crd/monitoring.coreos.com_servicemonitors.yaml',
};
export const COMPOSE_SPEC: GoFile = { module: 'github.com/compose-spec/compose-go/v2', version: 'v2.16.2', path: 'schema/compose-spec.json' };

/** Go: on PATH, else where the machine installs it. */
function goBinary(): string {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) if (dir && existsSync(join(dir, 'go'))) return join(dir, 'go');
  return '/usr/local/go/bin/go';
}

let helm: Promise<string> | undefined;
/** The helm binary scripts/helm.sh prints (building it on first use: minutes, once per machine). */
export function helmPath(): Promise<string> {
  helm ??= exec('sh', [join(ROOT, 'scripts/helm.sh')], { timeout: 1_200_000, maxBuffer: 16 << 20 }).then(({ stdout }) => stdout.trim());
  return helm;
}

/** A file of a Go module version, from the module cache (downloaded from the Go module proxy once). */
export async function goModuleFile(file: GoFile): Promise<string> {
  const { stdout } = await exec(goBinary(), ['mod', 'download', '-json', `${file.module}@${file.version}`], {
    cwd: tmpdir(),
    timeout: 300_000,
    maxBuffer: 16 << 20,
    env: { ...process.env, GOWORK: 'off', GOFLAGS: '-mod=mod' },
  });
  const info = JSON.parse(stdout) as { Dir?: string; Error?: string };
  if (!info.Dir) throw new Error(`go mod download ${file.module}@${file.version}: ${info.Error ?? 'no Dir'}`);
  return join(info.Dir, file.path);
}

export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  spec?: Record<string, unknown>;
  [key: string]: unknown;
}

/** `helm template` of the chart with a values file (or the defaults), rendered for KUBE_VERSION. */
export async function helmTemplate(values?: string, extra: string[] = []): Promise<{ text: string; objects: K8sObject[] }> {
  const args = [
    'template',
    'veil',
    join(ROOT, 'deploy/helm/veil'),
    '--namespace',
    'veil',
    '--kube-version',
    KUBE_VERSION,
    ...(values ? ['-f', values] : []),
    ...extra,
  ];
  const { stdout } = await exec(await helmPath(), args, { timeout: 60_000, maxBuffer: 16 << 20 });
  const objects = parseAllDocuments(stdout)
    .map((d) => d.toJSON() as K8sObject | null)
    .filter((o): o is K8sObject => o !== null);
  return { text: stdout, objects };
}

/** `helm lint --strict` with these values files, in order (none: the defaults). */
export async function helmLint(...values: string[]): Promise<string> {
  const { stdout } = await exec(
    await helmPath(),
    ['lint', join(ROOT, 'deploy/helm/veil'), '--strict', '--kube-version', KUBE_VERSION, ...values.flatMap((v) => ['-f', v])],
    { timeout: 60_000 },
  );
  return stdout;
}

export interface Validation {
  objects: { apiVersion: string; kind: string; name: string; schema: string }[];
  errors: { apiVersion: string; kind: string; name: string; path: string; message: string }[];
}

/** scripts/kube-validate.py over rendered objects: Kubernetes' schemas (strict) and the CRDs' for KEDA and prometheus-operator. */
export async function kubeValidate(text: string): Promise<Validation> {
  const [python, ...crds] = await Promise.all([
    deployToolsPython(),
    goModuleFile(KEDA_SCALEDOBJECT_CRD),
    goModuleFile(KEDA_TRIGGERAUTHENTICATION_CRD),
    goModuleFile(SERVICEMONITOR_CRD),
  ]);
  const args = [join(ROOT, 'scripts/kube-validate.py'), '--kube-version', KUBE_VERSION, ...crds.flatMap((c) => ['--crd', c]), '-'];
  const child = execFile(python, args, { timeout: 120_000, maxBuffer: 16 << 20 });
  child.stdin!.end(text);
  const stdout = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
    });
    child.once('error', reject);
    // exit 1 means errors were found: they are in the JSON
    child.once('close', (code) => (code === 0 || code === 1 ? resolve(out) : reject(new Error(`kube-validate.py exited ${code}`))));
  });
  return JSON.parse(stdout) as Validation;
}

export const readText = (path: string) => readFile(path, 'utf8');
