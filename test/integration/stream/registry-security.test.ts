import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { confluentRegistry, registrySettings } from '../../../src/stream/registry/index.ts';
import { REGISTRY_URL } from '../../helpers/kafka.ts';
import { makeTestPki, type TestPki } from '../../helpers/tls-certs.ts';

const USER = 'sr-user';
const PASSWORD = `sr-${randomBytes(8).toString('hex')}`;
const TOKEN = `tok-${randomBytes(8).toString('hex')}`;

/**
 * The schema registry behind TLS that asks for a client certificate and for credentials — as a
 * managed registry (Confluent Cloud: Basic; others: a bearer token) or a TLS-terminating proxy in
 * front of one does: here an HTTPS front with the run's certificates before the real Apicurio
 * Registry of the tests. veil reaches it with the settings of docs/kafka-security.md.
 */
describe('the schema registry over TLS with client certificates and Basic or bearer authentication (real registry behind)', () => {
  let dir: string;
  let pki: TestPki;
  let server: Server;
  let url: string;
  const seen: { cert: boolean; auth: string | undefined }[] = [];

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'veil-registry-tls-'));
    pki = await makeTestPki(join(dir, 'pki'), ['veil']);
    const key = readFileSync(join(pki.dir, 'broker.key'));
    server = createServer(
      { key, cert: readFileSync(join(pki.dir, 'broker.pem')), ca: readFileSync(pki.ca), requestCert: true, rejectUnauthorized: true },
      (req, res) => {
        const auth = req.headers.authorization;
        seen.push({ cert: (req.socket as { authorized?: boolean }).authorized === true, auth });
        if (auth !== `Basic ${Buffer.from(`${USER}:${PASSWORD}`).toString('base64')}` && auth !== `Bearer ${TOKEN}`) {
          res.writeHead(401, { 'content-type': 'application/json' }).end(JSON.stringify({ error_code: 40101, message: 'Unauthorized' }));
          return;
        }
        const chunks: Buffer[] = [];
        req.on('data', (c: Buffer) => chunks.push(c));
        req.on('end', async () => {
          const upstream = await fetch(`${REGISTRY_URL}${req.url!.replace(/^\/registry/, '')}`, {
            method: req.method,
            headers: { 'content-type': req.headers['content-type'] ?? 'application/json', accept: 'application/json' },
            ...(chunks.length ? { body: Buffer.concat(chunks) } : {}),
          });
          res
            .writeHead(upstream.status, { 'content-type': upstream.headers.get('content-type') ?? 'application/json' })
            .end(Buffer.from(await upstream.arrayBuffer()));
        });
      },
    );
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `https://127.0.0.1:${(server.address() as { port: number }).port}/registry`;
  }, 60_000);

  afterAll(async () => {
    await new Promise((r) => server?.close(r));
    await rm(dir, { recursive: true, force: true });
  });

  const tls = () => ({
    SCHEMA_REGISTRY_SSL_CA_LOCATION: pki.ca,
    SCHEMA_REGISTRY_SSL_CERTIFICATE_LOCATION: pki.client('veil').cert,
    SCHEMA_REGISTRY_SSL_KEY_LOCATION: pki.client('veil').key,
  });
  const schema = JSON.stringify({ type: 'record', name: 'Secured', fields: [{ name: 'email', type: 'string' }] });

  it('registers and reads schemas with a client certificate and Basic credentials from a mounted file', async () => {
    const userInfo = join(dir, 'user-info');
    await writeFile(userInfo, `${USER}:${PASSWORD}\n`);
    const registry = confluentRegistry(registrySettings({ SCHEMA_REGISTRY_URL: url, SCHEMA_REGISTRY_BASIC_AUTH_USER_INFO_FILE: userInfo, ...tls() })!);
    const subject = `secured-${randomBytes(4).toString('hex')}-value`;
    const id = await registry.register(subject, schema, 'AVRO');
    expect(JSON.parse(await registry.schemaById(id))).toMatchObject({ name: 'Secured' });
    expect(await registry.latestVersion!(subject)).toMatchObject({ id, schemaType: 'AVRO' });
    expect(seen.at(-1)).toMatchObject({ cert: true });
  });

  it("with a bearer token, and with Confluent's properties in VEIL_KAFKA_CONFIG_FILE", async () => {
    const bearer = confluentRegistry(registrySettings({ SCHEMA_REGISTRY_URL: url, SCHEMA_REGISTRY_BEARER_AUTH_TOKEN: TOKEN, ...tls() })!);
    await expect(bearer.latestVersion!(`absent-${randomBytes(4).toString('hex')}-value`)).resolves.toBeUndefined();
    const props = join(dir, 'client.properties');
    await writeFile(
      props,
      `bootstrap.servers=b:9092\nschema.registry.url=${url}\nbasic.auth.credentials.source=USER_INFO\nbasic.auth.user.info=${USER}:${PASSWORD}\nschema.registry.ssl.ca.location=${pki.ca}\nschema.registry.ssl.certificate.location=${pki.client('veil').cert}\nschema.registry.ssl.key.location=${pki.client('veil').key}\n`,
    );
    const fromFile = confluentRegistry(registrySettings({ VEIL_KAFKA_CONFIG_FILE: props })!);
    await expect(fromFile.latestVersion!(`absent-${randomBytes(4).toString('hex')}-value`)).resolves.toBeUndefined();
  });

  it('a wrong password, no client certificate, an untrusted server: REGISTRY_UNAVAILABLE, the secret in no message', async () => {
    const wrong = confluentRegistry(
      registrySettings({ SCHEMA_REGISTRY_URL: url, SCHEMA_REGISTRY_BASIC_AUTH_USER_INFO: `${USER}:nope-${PASSWORD}`, ...tls() })!,
    );
    const refused = await wrong.schemaById(1).then(
      () => new Error('answered') as Error & { code: string },
      (e: unknown) => e as Error & { code: string },
    );
    expect(refused).toMatchObject({ code: 'REGISTRY_UNAVAILABLE', message: expect.stringMatching(/HTTP 401/) });
    expect(refused.message).not.toContain(PASSWORD);
    const noCert = confluentRegistry(
      registrySettings({ SCHEMA_REGISTRY_URL: url, SCHEMA_REGISTRY_BASIC_AUTH_USER_INFO: `${USER}:${PASSWORD}`, SCHEMA_REGISTRY_SSL_CA_LOCATION: pki.ca })!,
    );
    await expect(noCert.schemaById(1)).rejects.toMatchObject({ code: 'REGISTRY_UNAVAILABLE' });
    const untrusted = confluentRegistry(
      registrySettings({
        SCHEMA_REGISTRY_URL: url,
        SCHEMA_REGISTRY_BASIC_AUTH_USER_INFO: `${USER}:${PASSWORD}`,
        ...tls(),
        SCHEMA_REGISTRY_SSL_CA_LOCATION: pki.otherCa,
      })!,
    );
    const e = await untrusted.schemaById(1).then(
      () => new Error('answered') as Error & { code: string },
      (x: unknown) => x as Error & { code: string },
    );
    expect(e).toMatchObject({ code: 'REGISTRY_UNAVAILABLE' });
    expect(e.message).not.toContain(PASSWORD);
  });

  it('refuses at start what would leak or contradict: credentials over plain HTTP, Basic and bearer at once, an unknown variable', () => {
    const refused = (env: Record<string, string>) => {
      try {
        registrySettings(env);
      } catch (e) {
        return `${(e as { code: string }).code}: ${(e as Error).message}`;
      }
      return 'accepted';
    };
    expect(refused({ SCHEMA_REGISTRY_URL: 'http://registry.example.com', SCHEMA_REGISTRY_BASIC_AUTH_USER_INFO: 'u:p' })).toMatch(
      /CONFIG_INVALID: .*unencrypted/,
    );
    expect(refused({ SCHEMA_REGISTRY_URL: 'http://127.0.0.1:8081', SCHEMA_REGISTRY_BASIC_AUTH_USER_INFO: 'u:p' })).toBe('accepted');
    expect(refused({ SCHEMA_REGISTRY_URL: 'https://r', SCHEMA_REGISTRY_BASIC_AUTH_USER_INFO: 'u:p', SCHEMA_REGISTRY_BEARER_AUTH_TOKEN: 't' })).toMatch(
      /both given/,
    );
    expect(refused({ SCHEMA_REGISTRY_URL: 'https://u:p@r', SCHEMA_REGISTRY_BASIC_AUTH_USER_INFO: 'u:p' })).toMatch(/both given/);
    expect(refused({ SCHEMA_REGISTRY_URL: 'https://r', SCHEMA_REGISTRY_BASIC_AUTH_USERINFO: 'u:p' })).toMatch(
      /SCHEMA_REGISTRY_BASIC_AUTH_USERINFO: no such setting/,
    );
    expect(refused({ SCHEMA_REGISTRY_URL: 'https://r', SCHEMA_REGISTRY_BASIC_AUTH_USER_INFO: 'nocolon' })).toMatch(/must be user:password/);
    expect(refused({ SCHEMA_REGISTRY_URL: 'http://127.0.0.1:1', SCHEMA_REGISTRY_SSL_CA_LOCATION: '/x' })).toMatch(/is not https/);
    expect(registrySettings({})).toBeUndefined();
    expect(JSON.stringify(registrySettings({ SCHEMA_REGISTRY_URL: 'https://u:secret-pw@r.example.com/api' }))).not.toContain('secret-pw');
  });
});
