import { readFileSync } from 'node:fs';

export function vectors<T>(file: string): T {
  return JSON.parse(readFileSync(new URL(`../../vectors/${file}`, import.meta.url), 'utf8')) as T;
}

export const hex = (s: string) => Uint8Array.from(Buffer.from(s, 'hex'));
export const toHex = (b: Uint8Array) => Buffer.from(b).toString('hex');

export interface WycheproofFile<G> {
  numberOfTests: number;
  testGroups: (G & { tests: WycheproofTest[] })[];
}

export interface WycheproofTest {
  tcId: number;
  comment: string;
  key: string;
  msg: string;
  result: 'valid' | 'invalid' | 'acceptable';
  iv?: string;
  aad?: string;
  ct?: string;
  tag?: string;
}

export function countTests(file: WycheproofFile<unknown>): number {
  return file.testGroups.reduce((n, g) => n + g.tests.length, 0);
}

/** An FPE vector (NIST FF1 samples, the FF3-1 set): numerals written in `alphabet`, radix-36 digits and letters when absent. */
export interface FpeVector {
  keyHex: string;
  radix: number;
  tweakHex: string;
  plaintext: string;
  ciphertext: string;
  alphabet?: string;
  sample?: number;
  id?: string;
}

export const DEFAULT_FPE_ALPHABET = '0123456789abcdefghijklmnopqrstuvwxyz';
