import { ESLint } from 'eslint';

const cwd = new URL('../..', import.meta.url).pathname;
let eslint: ESLint | undefined;

/** ESLint as the project configures it (one instance per test file) */
export function projectEslint(): ESLint {
  return (eslint ??= new ESLint({ cwd }));
}

/** rule ids of what ESLint, as the project configures it, reports for `code` placed at `file` (relative to the project) */
export async function rulesFiredAt(file: string, code: string): Promise<string[]> {
  const [result] = await projectEslint().lintText(code, { filePath: `${cwd}${file}` });
  return result!.messages.map((m) => m.ruleId ?? m.message);
}
