import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ROOT } from './processes.ts';

const exec = promisify(execFile);

/** The venvs the tests use and their PyPI packages, pinned: a new release cannot change what a test means between two runs. */
export const VENVS = {
  // in the order the tests first need them: the tests' warm-up (test/setup/tool-cache.ts) builds them so
  /** moto's server: the AWS KMS API on 127.0.0.1 for the AWS KMS adapter's tests (test/helpers/moto.ts) */
  moto: ['moto[server]==5.2.5'],
  /**
   * the interop tests: confluent-kafka's own serializers (Protobuf, JSON Schema, Avro with fastavro)
   * with their registry client, and grpcio-tools for protoc (test/helpers/confluent-python.ts)
   */
  'confluent-py': ['confluent-kafka[schemaregistry,protobuf,json,avro]==2.16.1', 'grpcio-tools==1.85.1'],
  /** an outsider verifying erasure receipts (test/integration/subjects/receipt-public.test.ts) */
  pyjwt: ['PyJWT[crypto]==2.10.1'],
  /**
   * the chart and image tests: kubernetes-validate ships the Kubernetes OpenAPI schemas up to its own
   * version; dockerfile wraps BuildKit's Dockerfile parser, the one `docker build` uses (test/deploy/kube-tools.ts)
   */
  'deploy-tools': ['kubernetes-validate==1.37.0', 'dockerfile==3.4.0'],
} as const;

const built = new Map<string, Promise<string>>();

/**
 * A venv of VENVS under ~/.cache/veil, built once by scripts/python-venv.sh (one build at a time
 * across processes, rebuilt when its package list changes): its directory.
 */
export function pythonVenv(name: keyof typeof VENVS): Promise<string> {
  let ready = built.get(name);
  if (!ready) {
    ready = exec('sh', [join(ROOT, 'scripts/python-venv.sh'), name, ...VENVS[name]], { timeout: 900_000 }).then(({ stdout }) => stdout.trim());
    // a failed build is tried again by the next caller, which then reports it
    ready.catch(() => built.delete(name));
    built.set(name, ready);
  }
  return ready;
}
