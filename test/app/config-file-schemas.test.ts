import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { jsonSchemas } from '../../src/app/config-file-schemas.ts';

describe('published JSON Schemas', () => {
  it.each(Object.keys(jsonSchemas()))('schemas/%s matches the zod schema (run tools/write-schemas.ts after a change)', (file) => {
    const committed = JSON.parse(readFileSync(new URL(`../../schemas/${file}`, import.meta.url), 'utf8'));
    expect(committed).toEqual(jsonSchemas()[file]);
  });
});
