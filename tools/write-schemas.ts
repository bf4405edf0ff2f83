// Regenerates schemas/*.json from the engine's zod schemas: scripts/node22 tools/write-schemas.ts
import { writeFileSync } from 'node:fs';
import { jsonSchemas } from '../src/engine/schemas.ts';

for (const [file, schema] of Object.entries(jsonSchemas())) {
  writeFileSync(new URL(`../schemas/${file}`, import.meta.url), `${JSON.stringify(schema, null, 2)}\n`);
}
