import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inspect } from 'node:util';
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KafkaError, Secret, secretsOf } from '../../src/kafka/index.ts';
import { parseJaasConfig } from '../../src/kafka/jaas-config.ts';
import { oidcTokenSource, type OidcSettings } from '../../src/kafka/oidc-token.ts';

describe("sasl.jaas.config, as Java's client files carry it", () => {
  it('reads the module, its family and its options: bare, double- and single-quoted, escapes, = and ; inside quotes', () => {
    expect(parseJaasConfig('org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="p=;q";')).toEqual({
      family: 'PLAIN',
      options: { username: 'u', password: 'p=;q' },
    });
    expect(parseJaasConfig("org.apache.kafka.common.security.scram.ScramLoginModule required\n  username='app'\n  password='it\\'s';")).toEqual({
      family: 'SCRAM',
      options: { username: 'app', password: "it's" },
    });
    expect(
      parseJaasConfig(
        'org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required clientId=veil clientSecret="s" extension_logicalCluster=lkc-1;',
      ),
    ).toEqual({ family: 'OAUTHBEARER', options: { clientId: 'veil', clientSecret: 's', extension_logicalCluster: 'lkc-1' } });
  });

  it.each([
    ['software.amazon.msk.auth.iam.IAMLoginModule required;', /not supported/],
    ['org.apache.kafka.common.security.plain.PlainLoginModule username="u";', /control flag/],
    ['org.apache.kafka.common.security.plain.PlainLoginModule required username="u"', /must end with ;/],
    ['org.apache.kafka.common.security.plain.PlainLoginModule required username="u;', /not closed/],
    ['org.apache.kafka.common.security.plain.PlainLoginModule required username="u" username="v";', /given twice/],
    ['org.apache.kafka.common.security.plain.PlainLoginModule required username="u"; other', /text follows/],
  ])('refuses %s, never quoting it', (text, message) => {
    expect(() => parseJaasConfig(text)).toThrow(message);
    try {
      parseJaasConfig(text);
    } catch (e) {
      expect((e as Error).message).not.toContain('"u');
    }
  });
});

describe('a Secret never prints', () => {
  it('String, JSON, util.inspect and template literals show [redacted]; reveal() gives the text', () => {
    const s = new Secret('hunter2');
    expect([String(s), `${s}`, JSON.stringify({ s }), inspect({ s })]).toEqual(['[redacted]', '[redacted]', '{"s":"[redacted]"}', '{ s: [redacted] }']);
    expect(s.reveal()).toBe('hunter2');
  });
});

describe('secretsOf: the last scrub of what a refused process prints', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'veil-scrub-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('takes out passwords from variables, their files, the properties file and JAAS lines, the registry user info', async () => {
    const secretFile = join(dir, 'pw');
    await writeFile(secretFile, 'from-a-file\n');
    const props = join(dir, 'client.properties');
    await writeFile(
      props,
      "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username='k' password='jaas-pw';\nbasic.auth.user.info=SR:sr-pw\n",
    );
    const scrub = secretsOf({
      VEIL_KAFKA_SASL_PASSWORD: 'direct-pw',
      VEIL_CONTROL_KAFKA_SASL_PASSWORD_FILE: secretFile,
      VEIL_KAFKA_CONFIG_FILE: props,
      SCHEMA_REGISTRY_BEARER_AUTH_TOKEN: 'bearer-tok',
    });
    expect(scrub('a direct-pw b from-a-file c jaas-pw d sr-pw e bearer-tok')).toBe('a [redacted] b [redacted] c [redacted] d [redacted] e [redacted]');
    expect(secretsOf({ VEIL_KAFKA_CONFIG_FILE: join(dir, 'absent') })('nothing to take')).toBe('nothing to take');
  });
});

describe('OAUTHBEARER tokens: OIDC client credentials', () => {
  const settings = (): OidcSettings => ({
    tokenEndpoint: new URL('https://idp.example.com/token'),
    clientId: 'veil app',
    clientSecret: new Secret('s3cr:et'),
    scope: 'kafka',
    extensions: { logicalCluster: 'lkc-1' },
  });
  const jwt = async (exp: number, sub = 'svc-veil') =>
    new SignJWT({}).setProtectedHeader({ alg: 'HS256' }).setSubject(sub).setExpirationTime(exp).sign(new Uint8Array(32));

  it('asks with HTTP Basic (id and secret form-encoded) for client_credentials and the scope; reuses the token until 80% of its life', async () => {
    let now = 1_000_000;
    const calls: { auth: string; body: string }[] = [];
    const fetchImpl = (async (_url: URL, init: RequestInit) => {
      calls.push({ auth: String((init.headers as Record<string, string>).authorization), body: String(init.body) });
      return Response.json({ access_token: await jwt(Math.floor(now / 1000) + 100), expires_in: 100, token_type: 'Bearer' });
    }) as unknown as typeof fetch;
    const source = oidcTokenSource(settings(), fetchImpl, () => now);
    const first = await source.token();
    expect(first).toMatchObject({ principal: 'svc-veil', extensions: { logicalCluster: 'lkc-1' }, expiresAt: 1_100_000 });
    expect(calls[0]!.auth).toBe(`Basic ${Buffer.from('veil%20app:s3cr%3Aet').toString('base64')}`);
    expect(Object.fromEntries(new URLSearchParams(calls[0]!.body))).toEqual({ grant_type: 'client_credentials', scope: 'kafka' });
    now += 79_000;
    expect(await source.token()).toBe(first);
    now += 2_000;
    await source.token();
    expect(calls).toHaveLength(2);
  });

  it('a refusal (401 invalid_client) is a denied KafkaError; an endpoint down is retriable; a body is never quoted', async () => {
    const answer = (status: number, body: unknown) => (async () => new Response(JSON.stringify(body), { status })) as unknown as typeof fetch;
    const refused = await oidcTokenSource(settings(), answer(401, { error: 'invalid_client', error_description: 'client s3cr:et unknown' }))
      .token()
      .catch((e: unknown) => e as KafkaError);
    expect(refused).toMatchObject({ code: 'AUTHENTICATION_FAILED', denied: true, retriable: false });
    expect((refused as Error).message).toMatch(/refused the client credentials \(invalid_client\)/);
    expect((refused as Error).message).not.toContain('s3cr');
    const down = await oidcTokenSource(settings(), (async () => {
      throw new TypeError('fetch failed');
    }) as unknown as typeof fetch)
      .token()
      .catch((e: unknown) => e as KafkaError);
    expect(down).toMatchObject({ code: 'TOKEN_ENDPOINT_UNAVAILABLE', retriable: true, denied: false });
    const busy = await oidcTokenSource(settings(), answer(503, {}))
      .token()
      .catch((e: unknown) => e as KafkaError);
    expect(busy).toMatchObject({ code: 'TOKEN_ENDPOINT_UNAVAILABLE', retriable: true });
  });

  it('a token without a lifetime, or already expired, is refused', async () => {
    const answer = (body: unknown) => (async () => Response.json(body)) as unknown as typeof fetch;
    await expect(oidcTokenSource(settings(), answer({ access_token: 'opaque' })).token()).rejects.toMatchObject({ code: 'OAUTHBEARER_TOKEN_INVALID' });
    await expect(oidcTokenSource(settings(), answer({ access_token: await jwt(10) })).token()).rejects.toMatchObject({ code: 'OAUTHBEARER_TOKEN_INVALID' });
    expect(await oidcTokenSource(settings(), answer({ access_token: 'opaque', expires_in: 60 }), () => 0).token()).toMatchObject({
      value: 'opaque',
      expiresAt: 60_000,
      principal: 'veil app',
    });
  });
});
