import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';

const cwd = new URL('../..', import.meta.url).pathname;
const eslint = new ESLint({ cwd });

async function lintEngineText(code: string, file = 'src/engine/probe.ts'): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: `${cwd}${file}` });
  return result!.messages.map((m) => `${m.ruleId}: ${m.message}`);
}

describe('architecture', () => {
  it('the whole project passes lint, including the engine layering rule', async () => {
    const results = await eslint.lintFiles(['src', 'test', 'bench', 'tools']);
    const problems = results.flatMap((r) => r.messages.map((m) => `${r.filePath}:${m.line} ${m.ruleId} ${m.message}`));
    expect(problems).toEqual([]);
  }, 120_000);

  it.each([
    ["import { readFileSync } from 'node:fs';", 'veil/engine-layering'],
    ["import net from 'node:net';", 'veil/engine-layering'],
    ["import { Kafka } from 'kafkajs';", 'veil/engine-layering'],
    ["import Fastify from 'fastify';", 'veil/engine-layering'],
    ["import { LocalKeystore } from '../keystore/local-keystore.ts';", 'veil/engine-layering'],
    ['export const t = Date.now();', 'no-restricted-syntax'],
    ['export const d = new Date();', 'no-restricted-syntax'],
    ['export const e = process.env.X;', 'no-restricted-globals'],
    ["export const p = import('node:fs/promises');", 'veil/engine-layering'],
  ])('rejects in src/engine: %s', async (code, rule) => {
    const messages = await lintEngineText(code);
    expect(messages.some((m) => m.startsWith(`${rule}:`))).toBe(true);
  });

  it('allows the engine its pure dependencies', async () => {
    const code =
      "import { z } from 'zod';\nimport { createHash } from 'node:crypto';\nimport { unsafe } from '@noble/ciphers/aes.js';\nimport { VeilError } from './errors.ts';\nexport const x = [z, createHash, unsafe, VeilError];\n";
    expect(await lintEngineText(code)).toEqual([]);
  });

  it('keeps key bytes inside the crypto and keystore modules', async () => {
    const code = "import { revealKeyBytes } from '../engine/key-access/secret-key.ts';\nexport const x = revealKeyBytes;\n";
    const [result] = await eslint.lintText(code, { filePath: `${cwd}src/app/open-probe.ts` });
    expect(result!.messages.map((m) => m.ruleId)).toContain('no-restricted-imports');
  });
});
