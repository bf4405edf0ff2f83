import { parseArgs } from 'node:util';
import { randomUUID } from 'node:crypto';
import { openEngine } from '../app/open-engine.ts';
import { resolveConfigPath, resolveDataDir } from '../env/index.ts';
import type { TransformRequest } from '../engine/index.ts';
import { errorDocument } from './errors.ts';
import type { Command } from './io.ts';

const SAMPLE = [
  ['email', 'alice@example.com'],
  ['cardNumber', '4111-1111-1111-1111'],
  ['nationalId', 'QQ123456C'],
  ['name', 'Alice Émilie Dupont'],
] as const;

function body(action: string, role: string, values: readonly (readonly [string, string])[]): TransformRequest {
  const rc = randomUUID();
  const pc = randomUUID();
  return {
    rightsContexts: [{ guid: rc, evidences: [{ name: 'Role', value: role }] }],
    processingContexts: [{ guid: pc, evidences: [{ name: 'Action', value: action }] }],
    requests: [
      {
        guid: randomUUID(),
        rightsContext: rc,
        processingContext: pc,
        instances: values.map(([p, v]) => ({ className: 'Customer', propertyName: p, value: v })),
      },
    ],
  };
}

export const demoHelp = `Usage: veil demo [--config F] [--data-dir D]

Protects then unprotects invented sample customer fields offline as role "fraud", and prints
both transform calls.
  --config    default $VEIL_CONFIG, else the embedded config/example.yaml
  --data-dir  default $VEIL_DATA_DIR, else ./.veil
Keys the configuration names and the keystore lacks are created there; without $VEIL_MASTER_KEY
(not allowed with VEIL_ENV=production) a development master key file is used, created if absent.
Exit codes: 0 ok, 1 configuration or key error, 2 usage error.
`;

/**
 * `veil demo` (`npm run veil -- demo`): veil on its embedded defaults. Provisions the demo keys in the data directory on
 * first run, then protects and unprotects sample customer fields and prints both transform calls.
 * The sample values are invented demo data, printed on purpose.
 */
export const demoCommand: Command = async (args, io) => {
  let values;
  try {
    ({ values } = parseArgs({ args, options: { config: { type: 'string' }, 'data-dir': { type: 'string' }, help: { type: 'boolean', short: 'h' } } }));
  } catch (e) {
    io.stderr(`veil demo: ${(e as Error).message}\n`);
    return 2;
  }
  if (values.help) {
    io.stdout(demoHelp);
    return 0;
  }
  try {
    const configFile = resolveConfigPath(values.config, io.env, io.cwd);
    const { engine, keystore } = await openEngine({
      configFile,
      dataDir: resolveDataDir(values['data-dir'], io.env, io.cwd),
      env: io.env,
      now: io.now,
      provision: true,
      notice: (line) => io.stderr(`veil demo: ${line}\n`),
    });
    const identity = { subject: 'demo', roles: ['fraud'] };
    const protectBody = body('Protect', 'fraud', SAMPLE);
    const protectedValues = engine.transform(protectBody, identity);
    const back = protectedValues.responses[0]!.instances.map((i) => [i.propertyName, i.value] as const);
    const unprotectBody = body('Unprotect', 'fraud', back);
    const clear = engine.transform(unprotectBody, identity);
    const rows = SAMPLE.map(
      ([p, v], i) => `  Customer.${p.padEnd(11)} ${v.padEnd(22)} → ${back[i]![1]}\n${' '.repeat(37)}← ${clear.responses[0]!.instances[i]!.value}`,
    );
    io.stdout(
      `veil demo — configuration ${configFile}, keystore ${keystore.path}\n\n` +
        `Protect then Unprotect as role "fraud":\n${rows.join('\n')}\n\n` +
        `The transform request of the protect call:\n${JSON.stringify(protectBody, null, 2)}\n\n` +
        `Try it yourself:\n  bin/veil transform --roles fraud --request - < request.json\n  bin/veil keys list\n  bin/veil config validate\n`,
    );
    return 0;
  } catch (e) {
    io.stderr(`${JSON.stringify(errorDocument(e), null, 2)}\n`);
    return 1;
  }
};
