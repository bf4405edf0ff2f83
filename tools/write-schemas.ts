// Regenerates schemas/*.json from the engine's zod schemas and the HTTP service's OpenAPI
// document: scripts/node22 tools/write-schemas.ts
import { writeFileSync } from 'node:fs';
import { jsonSchemas } from '../src/engine/schemas.ts';
import { openApiDocument } from '../src/http/openapi.ts';

const files = { ...jsonSchemas(), 'openapi.json': openApiDocument() };
for (const [file, schema] of Object.entries(files)) {
  writeFileSync(new URL(`../schemas/${file}`, import.meta.url), `${JSON.stringify(schema, null, 2)}\n`);
}
