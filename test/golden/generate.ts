// Regenerates test/golden/outputs.json. Only for a NEW output format: changing an existing record
// means data already protected would stop unprotecting. Run: scripts/node22 test/golden/generate.ts
import { writeFileSync } from 'node:fs';
import { computeGolden } from './golden-cases.ts';

writeFileSync(new URL('./outputs.json', import.meta.url), `${JSON.stringify(computeGolden(), null, 2)}\n`);
