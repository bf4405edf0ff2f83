import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { openEngine } from '../app/open-engine.ts';
import { resolveConfigPath, resolveDataDir } from '../env/index.ts';
import { VeilError } from '../engine/index.ts';
import { errorDocument } from './errors.ts';
import type { Command } from './io.ts';

export const transformHelp = `Usage: veil transform [--config F] [--roles r1,r2] [--request FILE|-] [--data-dir D]

Reads a transform request body (spec §2.1) and prints the response body (§2.7) on stdout.
On failure prints {"error": {code, message, retriable, details}} on stdout and exits 1
(details name request guid, instance index and JSON pointer, never a value).
  --roles     roles the caller holds (a Role evidence counts only if listed here)
  --request   file with the body, or - for stdin (default)
Exit codes: 0 ok, 1 transform error, 2 usage error.
`;

export const transformCommand: Command = async (args, io) => {
  let values;
  try {
    ({ values } = parseArgs({
      args,
      options: {
        config: { type: 'string' },
        roles: { type: 'string' },
        request: { type: 'string' },
        'data-dir': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    }));
  } catch (e) {
    io.stderr(`veil transform: ${(e as Error).message}\n`);
    return 2;
  }
  if (values.help) {
    io.stdout(transformHelp);
    return 0;
  }
  try {
    const source = values.request ?? '-';
    const text = source === '-' ? await io.readStdin() : await readFile(resolve(io.cwd, source), 'utf8');
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      throw new VeilError('REQUEST_MALFORMED', 'the request is not valid JSON', [{ code: 'REQUEST_MALFORMED', pointer: '', message: 'not valid JSON' }]);
    }
    const { engine } = await openEngine({
      configFile: resolveConfigPath(values.config, io.env, io.cwd),
      dataDir: resolveDataDir(values['data-dir'], io.env, io.cwd),
      env: io.env,
      now: io.now,
      provision: false,
      notice: (line) => io.stderr(`veil transform: ${line}\n`),
    });
    const roles = (values.roles ?? '')
      .split(',')
      .map((r) => r.trim())
      .filter(Boolean);
    io.stdout(`${JSON.stringify(engine.transform(body, { roles }), null, 2)}\n`);
    return 0;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') {
      io.stdout(`${JSON.stringify({ error: { code: 'REQUEST_MALFORMED', message: 'the request file cannot be read', retriable: false } })}\n`);
      return 1;
    }
    io.stdout(`${JSON.stringify(errorDocument(e), null, 2)}\n`);
    return 1;
  }
};
