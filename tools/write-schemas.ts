// Regenerates schemas/*.json from the zod schemas (the configuration file's, composed in src/app,
// and the engine's transform bodies) and the HTTP service's OpenAPI document:
// scripts/node22 tools/write-schemas.ts
import { writeFileSync } from 'node:fs';
import { jsonSchemas } from '../src/app/config-file-schemas.ts';
import { openApiDocument } from '../src/http/openapi.ts';

const files = { ...jsonSchemas(), 'openapi.json': openApiDocument() };
for (const [file, schema] of Object.entries(files)) {
  writeFileSync(new URL(`../schemas/${file}`, import.meta.url), `${JSON.stringify(schema, null, 2)}\n`);
}
