import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { openApiDocument } from '../../src/http/openapi.ts';

describe('schemas/openapi.json', () => {
  it('matches the document the service serves (run tools/write-schemas.ts after a change)', () => {
    expect(JSON.parse(readFileSync(new URL('../../schemas/openapi.json', import.meta.url), 'utf8'))).toEqual(openApiDocument());
  });
});
