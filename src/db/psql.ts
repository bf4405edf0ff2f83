import { spawn } from 'node:child_process';

export interface PsqlResult {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs a script through psql in one transaction that stops at the first error. The script goes
 * in on stdin (never in argv, where `ps` shows it), and a password in the URL is moved to
 * PGPASSWORD for the same reason.
 */
export function runPsql(
  databaseUrl: string,
  script: string,
  options: { env?: NodeJS.ProcessEnv; psql?: string; singleTransaction?: boolean } = {},
): Promise<PsqlResult> {
  const { url, password } = splitPassword(databaseUrl);
  const env = { ...(options.env ?? process.env), ...(password === undefined ? {} : { PGPASSWORD: password }) };
  const child = spawn(
    options.psql ?? 'psql',
    [
      '--no-psqlrc',
      '--quiet',
      '--set',
      'ON_ERROR_STOP=1',
      ...(options.singleTransaction === false ? [] : ['--single-transaction']),
      '--dbname',
      url,
      '--file',
      '-',
    ],
    { env, stdio: ['pipe', 'pipe', 'pipe'] },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += String(d)));
  child.stderr.on('data', (d) => (stderr += String(d)));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolve({ code: code ?? 1, stdout, stderr }));
    child.stdin.on('error', () => undefined);
    child.stdin.end(script);
  });
}

/** postgres://user:secret@host/db → the URL without the secret, and the secret */
export function splitPassword(databaseUrl: string): { url: string; password?: string } {
  if (!/^postgres(ql)?:\/\//.test(databaseUrl)) return { url: databaseUrl };
  let parsed: URL;
  try {
    parsed = new URL(databaseUrl);
  } catch {
    return { url: databaseUrl };
  }
  if (parsed.password === '') return { url: databaseUrl };
  const password = decodeURIComponent(parsed.password);
  parsed.password = '';
  return { url: parsed.toString(), password };
}
