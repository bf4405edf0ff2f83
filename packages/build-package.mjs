// Builds one client package (run in its directory, `npm run build`): its sources are the
// service's own (src/client), compiled to ESM (dist/esm) and CommonJS (dist/cjs), each with type
// declarations, by the TypeScript compiler the workspace already has.
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';

const dir = process.cwd();
const tsc = createRequire(join(dir, 'package.json')).resolve('typescript/bin/tsc');
rmSync(join(dir, 'dist'), { recursive: true, force: true });
for (const config of ['tsconfig.json', 'tsconfig.cjs.json']) execFileSync(process.execPath, [tsc, '-p', join(dir, config)], { stdio: 'inherit' });

// tsc rewrites `./x.ts` to `./x.js` in JavaScript, not in declarations: consumers resolve .js
const relativeTs = /(from\s+|import\()(['"])(\.\.?\/[^'"]+)\.ts\2/g;
function rewriteDeclarations(at) {
  for (const name of readdirSync(at)) {
    const path = join(at, name);
    if (statSync(path).isDirectory()) rewriteDeclarations(path);
    else if (name.endsWith('.d.ts')) writeFileSync(path, readFileSync(path, 'utf8').replace(relativeTs, '$1$2$3.js$2'));
  }
}
rewriteDeclarations(join(dir, 'dist'));
// the package is "type": "module"; its CommonJS half says so for Node and TypeScript alike
writeFileSync(join(dir, 'dist/cjs/package.json'), `${JSON.stringify({ type: 'commonjs' })}\n`);
