import { execFile } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const openssl = (args: string[], cwd: string) => run('openssl', args, { cwd, timeout: 60_000 });
/** openssl req's arguments for a new, unencrypted P-256 key */
const NEW_P256_KEY = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];

/** PEM files made for one test run: a CA, the broker's certificate, clients' certificates (good, expired, from another CA). */
export interface TestPki {
  dir: string;
  /** the CA every good certificate is signed by */
  ca: string;
  /** the broker's key and chain in one PEM file (its key encrypted with `brokerKeyPassword`), for Kafka's PEM keystore */
  brokerKeystore: string;
  brokerKeyPassword: string;
  /** a client's certificate and key (CN = its principal) */
  client(name: string): { cert: string; key: string };
  /** a client certificate that expired yesterday, signed by the CA */
  expired: { cert: string; key: string };
  /** a CA the broker does not trust, and a client certificate it signed */
  otherCa: string;
  untrusted: { cert: string; key: string };
}

/** A self-signed P-256 certificate for `/CN=${cn}` and its unencrypted key (openssl req -x509), valid `days`, with the extensions `addext`. */
async function selfSigned(cwd: string, files: { cert: string; key: string }, cn: string, days: number, addext: string[]): Promise<void> {
  const extensions = addext.flatMap((e) => ['-addext', e]);
  await openssl(['req', '-x509', ...NEW_P256_KEY, '-keyout', files.key, '-out', files.cert, '-days', String(days), '-subj', `/CN=${cn}`, ...extensions], cwd);
}

async function ca(dir: string, name: string): Promise<void> {
  await selfSigned(dir, { cert: `${name}.pem`, key: `${name}.key` }, name, 2, ['basicConstraints=critical,CA:TRUE', 'keyUsage=critical,keyCertSign,cRLSign']);
}

/**
 * A self-signed certificate for a server on 127.0.0.1 (CN=127.0.0.1, valid one day, the given
 * subjectAltName), written to `files.cert` and `files.key` (absolute paths); clients trust the
 * certificate itself.
 */
export async function selfSignedServerCert(files: { cert: string; key: string }, subjectAltName: string): Promise<void> {
  await selfSigned(dirname(files.cert), files, '127.0.0.1', 1, [`subjectAltName=${subjectAltName}`]);
}

/** A certificate for `cn` signed by `issuer`, valid two days from now, or (`expired`) from three days ago to yesterday: openssl ca takes explicit dates, x509 -req only a length. */
async function leaf(dir: string, cn: string, issuer: string, options: { server?: boolean; expired?: boolean } = {}): Promise<{ cert: string; key: string }> {
  await openssl(['req', ...NEW_P256_KEY, '-keyout', `${cn}.key`, '-out', `${cn}.csr`, '-subj', `/CN=${cn}`], dir);
  const ext = options.server
    ? 'basicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=serverAuth,clientAuth\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n'
    : 'basicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=clientAuth\n';
  await writeFile(join(dir, `${cn}.ext`), ext);
  if (options.expired) {
    // a certificate whose validity ended before now: openssl ca with explicit start and end dates
    await writeFile(
      join(dir, 'ca.cnf'),
      `[ca]\ndefault_ca=d\n[d]\ndatabase=${dir}/index.txt\nnew_certs_dir=${dir}\nserial=${dir}/serial\ndefault_md=sha256\npolicy=p\nunique_subject=no\n[p]\ncommonName=supplied\n`,
    );
    await writeFile(join(dir, 'index.txt'), '');
    await writeFile(join(dir, 'serial'), '1000\n');
    const day = (offset: number) => new Date(Date.now() + offset * 86_400_000).toISOString().replace(/[-:T]/g, '').slice(2, 14) + 'Z';
    await openssl(
      [
        'ca',
        '-batch',
        '-config',
        'ca.cnf',
        '-cert',
        `${issuer}.pem`,
        '-keyfile',
        `${issuer}.key`,
        '-in',
        `${cn}.csr`,
        '-out',
        `${cn}.pem`,
        '-startdate',
        day(-3),
        '-enddate',
        day(-1),
        '-extfile',
        `${cn}.ext`,
        '-notext',
      ],
      dir,
    );
  } else {
    await openssl(
      [
        'x509',
        '-req',
        '-in',
        `${cn}.csr`,
        '-CA',
        `${issuer}.pem`,
        '-CAkey',
        `${issuer}.key`,
        '-CAcreateserial',
        '-out',
        `${cn}.pem`,
        '-days',
        '2',
        '-extfile',
        `${cn}.ext`,
      ],
      dir,
    );
  }
  return { cert: join(dir, `${cn}.pem`), key: join(dir, `${cn}.key`) };
}

/** Makes a CA, the broker's certificate (127.0.0.1, localhost) and the clients' in `dir`, with openssl. */
export async function makeTestPki(dir: string, clients: string[]): Promise<TestPki> {
  await mkdir(dir, { recursive: true });
  await ca(dir, 'test-ca');
  await ca(dir, 'other-ca');
  const broker = await leaf(dir, 'broker', 'test-ca', { server: true });
  const brokerKeyPassword = 'broker-key-pass';
  // Kafka's PEM keystore takes an encrypted PKCS#8 key, followed by the chain; PBES2 needs a SecretKeyFactory Java 17 lacks, so PKCS#12's PBE with 3DES
  await openssl(['pkcs8', '-topk8', '-in', broker.key, '-out', 'broker-enc.key', '-v1', 'PBE-SHA1-3DES', '-passout', `pass:${brokerKeyPassword}`], dir);
  const brokerKeystore = join(dir, 'broker-keystore.pem');
  await writeFile(brokerKeystore, `${await readFile(join(dir, 'broker-enc.key'), 'utf8')}${await readFile(broker.cert, 'utf8')}`);
  const made = new Map<string, { cert: string; key: string }>();
  for (const name of clients) made.set(name, await leaf(dir, name, 'test-ca'));
  const expired = await leaf(dir, 'expired-client', 'test-ca', { expired: true });
  const untrusted = await leaf(dir, 'untrusted-client', 'other-ca');
  return {
    dir,
    ca: join(dir, 'test-ca.pem'),
    brokerKeystore,
    brokerKeyPassword,
    client: (name) => {
      const c = made.get(name);
      if (!c) throw new Error(`no client certificate ${name}`);
      return c;
    },
    expired,
    otherCa: join(dir, 'other-ca.pem'),
    untrusted,
  };
}
