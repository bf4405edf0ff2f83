// Attack: an editor points a pipeline's metricsUrls at the cloud metadata service, and the
// serving process scrapes instance credentials for every viewer to see. The configuration is
// refused (veil config validate, as a process), and the scraper refuses such addresses itself —
// literal, in any spelling, or resolved from a name.
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PortalFault } from '../../../src/portal/errors.ts';
import { guardedFetch, isRefusedAddress } from '../../../src/portal/metrics-address.ts';
import { PipelineMetrics } from '../../../src/portal/pipeline-metrics.ts';
import { EXAMPLE_CONFIG_TEXT } from '../../helpers/engine-fixture.ts';
import { ROOT } from '../../helpers/processes.ts';
import { pipelineYaml } from '../../helpers/pipeline-yaml.ts';

const REFUSED = [
  'http://169.254.169.254/latest/meta-data/',
  'http://169.254.1.1:9464/metrics',
  'http://2852039166/metrics', // 169.254.169.254 in decimal
  'http://0xa9.0xfe.0xa9.0xfe/metrics',
  'http://[fd00:ec2::254]/metrics',
  'http://[fe80::1]:9464/metrics',
  'http://[::ffff:169.254.169.254]/metrics',
  'http://metadata.google.internal/computeMetadata/v1/',
  'http://METADATA.google.internal./x',
];
let dir: string;

const pipeline = (urls: string[]) => `pipelines:\n${pipelineYaml('customers', `    metricsUrls: [${urls.map((u) => `'${u}'`).join(', ')}]\n`)}`;

async function validate(text: string): Promise<{ code: number; out: string }> {
  const file = join(dir, `c${Math.random().toString(36).slice(2)}.yaml`);
  await writeFile(file, text);
  try {
    const { stdout, stderr } = await promisify(execFile)(join(ROOT, 'bin/veil'), ['config', 'validate', '--config', file]);
    return { code: 0, out: stdout + stderr };
  } catch (e) {
    const err = e as { code: number; stdout: string; stderr: string };
    return { code: err.code, out: err.stdout + err.stderr };
  }
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'veil-metrics-urls-'));
});
afterAll(async () => rm(dir, { recursive: true, force: true }));

describe('metricsUrls refuse link-local and metadata addresses', () => {
  it('veil config validate reports each one at its pointer, and accepts a host allowed by name', async () => {
    const refused = await validate(`${EXAMPLE_CONFIG_TEXT}\n${pipeline([...REFUSED, 'http://10.0.0.5:9464/metrics'])}`);
    expect(refused.code).toBe(1);
    REFUSED.forEach((_, i) => expect(refused.out).toContain(`/pipelines/customers/metricsUrls/${i}: is a`));
    expect(refused.out).not.toContain(`/metricsUrls/${REFUSED.length}:`);
    const allowed = await validate(
      `${EXAMPLE_CONFIG_TEXT}\n${pipeline(['http://169.254.10.7:9464/metrics'])}portal:\n  metricsAllowedHosts: ['169.254.10.7']\n`,
    );
    expect(allowed.code, allowed.out).toBe(0);
  }, 60_000);

  it('the scraper never connects to one, even when the configuration did not stop it', async () => {
    const asked: string[] = [];
    const metrics = new PipelineMetrics({
      pipelines: () => ({ p: { metricsUrls: REFUSED } as never }),
      fetch: (async (url: string) => {
        asked.push(url);
        return new Response('', { status: 200 });
      }) as typeof fetch,
    });
    await metrics.scrape();
    expect(asked).toEqual([]);
    expect(metrics.series('p')!.sources.map((s) => s.reason)).toEqual(REFUSED.map(() => 'refused: link-local or metadata address'));
    // the default fetch refuses them before any connection
    for (const url of REFUSED) {
      const refusal = await guardedFetch(() => [])(url).catch((e: unknown) => e);
      expect(refusal).toBeInstanceOf(PortalFault);
      expect((refusal as PortalFault).code).toBe('METRICS_ADDRESS_REFUSED');
    }
  });

  it('classifies every spelling of the refused ranges, and nothing else', () => {
    for (const a of ['169.254.0.1', '169.254.255.255', 'fe80::1', 'febf::1', 'fd00:ec2::254', '::ffff:169.254.169.254', '::ffff:a9fe:a9fe', '[fe80::1%eth0]'])
      expect(isRefusedAddress(a), a).toBe(true);
    for (const a of ['169.253.255.255', '169.255.0.1', '127.0.0.1', '10.0.0.1', 'fec0::1', '::1', 'fd00:ec2::253', '::ffff:127.0.0.1'])
      expect(isRefusedAddress(a), a).toBe(false);
  });
});
