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

// A package built from one module of src/client against another package (package.json
// "veilBuild"): tsc emits every module the entry reaches; only `keep` stays, and its imports of
// the others become imports of that package, so the two share one copy (and one error class).
const build = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')).veilBuild;
if (build) {
  for (const half of ['esm', 'cjs']) {
    const out = join(dir, 'dist', half);
    for (const name of readdirSync(out)) {
      if (!build.keep.includes(name.replace(/\.(d\.ts|js)$/, ''))) {
        rmSync(join(out, name), { recursive: true, force: true });
        continue;
      }
      let text = readFileSync(join(out, name), 'utf8');
      for (const [from, to] of Object.entries(build.external)) text = text.replaceAll(`'${from}'`, `'${to}'`).replaceAll(`"${from}"`, `"${to}"`);
      const stray = /(?:from\s+|require\(|import\()['"](\.\.?\/[^'"]+)['"]/.exec(text);
      if (stray) throw new Error(`${half}/${name} still imports ${stray[1]}: add it to veilBuild.keep or veilBuild.external`);
      writeFileSync(join(out, name), text);
    }
  }
}
// the package is "type": "module"; its CommonJS half says so for Node and TypeScript alike
writeFileSync(join(dir, 'dist/cjs/package.json'), `${JSON.stringify({ type: 'commonjs' })}\n`);
