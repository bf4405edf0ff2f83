// veil's architecture rules for ESLint.
import path from 'node:path';

/** The visitors that hand `check(node, source)` every import's source: static, re-export, dynamic. */
function importVisitors(check) {
  return {
    ImportDeclaration: (node) => check(node, node.source.value),
    ExportNamedDeclaration: (node) => node.source && check(node, node.source.value),
    ExportAllDeclaration: (node) => check(node, node.source.value),
    ImportExpression: (node) => check(node, node.source.type === 'Literal' ? node.source.value : undefined),
  };
}

/** importVisitors for relative specifiers only: `visit(node, source, target)`, target the absolute path imported. */
function relativeImports(file, visit) {
  return importVisitors((node, source) => {
    if (typeof source === 'string' && source.startsWith('.')) visit(node, source, path.resolve(path.dirname(file), source));
  });
}

/** An ESLint rule of kind 'problem' (no options): its description, its messages by id, and its create(context). */
function problemRule(description, messages, create) {
  return { meta: { type: 'problem', docs: { description }, schema: [], messages }, create };
}

/** What src/engine may import besides its own files: pure computation only. */
// node:async_hooks for AsyncLocalStorage only: the data subject of the values being transformed
// follows a record across its serde's awaits (src/engine/key-access/subject-keyring.ts); it is no I/O
const ENGINE_ALLOWED = [/^zod$/, /^yaml$/, /^@noble\/(ciphers|hashes)\//, /^node:crypto$/, /^node:async_hooks$/];

const engineLayering = problemRule(
  'src/engine is pure: it imports only its own files and pure libraries (no I/O, clock, env)',
  {
    outside: "src/engine must not import '{{source}}': it lies outside src/engine (others depend on the engine, never the reverse)",
    impure:
      "src/engine must not import '{{source}}': the engine is pure (no I/O, clock or environment); allowed: zod, yaml, @noble/*, node:crypto, node:async_hooks (AsyncLocalStorage)",
  },
  (context) => {
    const file = context.filename;
    const engineRoot = path.join(context.cwd, 'src', 'engine') + path.sep;
    if (!file.startsWith(engineRoot)) return {};
    const check = (node, source) => {
      if (typeof source !== 'string') return;
      if (source.startsWith('.')) {
        const target = path.resolve(path.dirname(file), source);
        if (!target.startsWith(engineRoot)) context.report({ node, messageId: 'outside', data: { source } });
      } else if (!ENGINE_ALLOWED.some((re) => re.test(source))) {
        context.report({ node, messageId: 'impure', data: { source } });
      }
    };
    return importVisitors(check);
  },
);

/**
 * The engine's front door: code outside src/engine imports the engine only through
 * src/engine/index.ts. Tests under test/engine test the internals (crypto vectors, transformers)
 * and may reach them.
 */
const engineFrontDoor = problemRule(
  'outside src/engine, import the engine only from src/engine/index.ts',
  {
    internal:
      "'{{source}}' reaches into src/engine: import from src/engine/index.ts, the engine's front door (only test/engine may reach the internals it tests)",
  },
  (context) => {
    const file = context.filename;
    const engineDir = path.join(context.cwd, 'src', 'engine');
    const frontDoor = path.join(engineDir, 'index.ts');
    const insiders = [engineDir + path.sep, path.join(context.cwd, 'test', 'engine') + path.sep];
    if (insiders.some((dir) => file.startsWith(dir))) return {};
    return relativeImports(file, (node, source, target) => {
      if ((target === engineDir || target.startsWith(engineDir + path.sep)) && target !== frontDoor)
        context.report({ node, messageId: 'internal', data: { source } });
    });
  },
);

/**
 * Modules behind a front door: source outside each imports it only through its index.ts (and the
 * layer's errors.ts, which any layer may catch). control: versions, mirrors, signing, the watch,
 * both store adapters; db, drift-guard, audit, discover (issue 44: one door each, so a reader
 * sees what a module offers). Tests may reach the internals they test, as the Kafka adapter's.
 */
const FRONT_DOORS = ['control', 'db', 'drift-guard', 'audit', 'discover', 'keystore', 'observability', 'identity'];
const frontDoors = problemRule(
  'outside a module with a front door (src/control, src/db, src/drift-guard, src/audit, src/discover, src/keystore, src/observability, src/identity), source imports it only from its index.ts',
  {
    internal: "'{{source}}' reaches into src/{{module}}: import from src/{{module}}/index.ts, its front door",
  },
  (context) => {
    const file = context.filename;
    const src = path.join(context.cwd, 'src') + path.sep;
    if (!file.startsWith(src)) return {};
    const own = file.slice(src.length).split(path.sep)[0];
    return relativeImports(file, (node, source, target) => {
      if (!target.startsWith(src)) return;
      const module = target.slice(src.length).split(path.sep)[0];
      if (module === own || !FRONT_DOORS.includes(module)) return;
      if (target !== path.join(src, module, 'index.ts') && !isErrorsModule(target, context.cwd))
        context.report({ node, messageId: 'internal', data: { source, module } });
    });
  },
);

/**
 * src/app only wires: it puts adapters and neutral modules together into processes and does no
 * work of its own. Judged by what a file does, not its name (issue 40: a 157-line sampler passed
 * as `open-discover-sources.ts`): no class, no `while` or `do` loop, no regular expression (parsing
 * is logic), and none of the libraries that talk to the outside world — sockets, processes,
 * terminals, databases, HSMs, KMSs, Kafka, HTTP clients — which belong to the module that owns that
 * conversation. And by its name too, so a reader knows what each file is: `open-*.ts` (a process or
 * a part of one), `config-file*.ts` (the configuration file of every section, its JSON schemas),
 * `logger.ts`, `*-thread.ts` (a worker thread's entry, which must be a module of its own).
 */
const WIRING_FILE = /^(open-[a-z0-9-]+|config-file(-[a-z0-9-]+)?|logger|[a-z0-9-]+-thread)\.ts$/;
const TALKS_OUT = [
  /^node:(net|tls|dgram|readline|child_process|http2?|https)$/,
  /^(pg|better-sqlite3|pkcs11js|undici|kafkajs)$/,
  /^@aws-sdk\//,
  /^@confluentinc\//,
];
const wiringOnly = problemRule(
  'src/app holds only wiring: no class, loop, regular expression or I/O library; files open-*.ts, config-file*.ts, logger.ts, *-thread.ts',
  {
    notWiring: 'src/app/{{name}} is not wiring (open-*.ts, config-file*.ts, logger.ts, *-thread.ts): move its logic into the module it belongs to',
    logic: 'src/app/{{name}} does work of its own ({{what}}): wiring only puts modules together; move it into the module it belongs to',
  },
  (context) => {
    const appDir = path.join(context.cwd, 'src', 'app') + path.sep;
    const file = context.filename;
    if (!file.startsWith(appDir)) return {};
    const name = file.slice(appDir.length);
    const logic = (what) => (node) => context.report({ node, messageId: 'logic', data: { name, what } });
    return {
      Program: (node) => {
        if (name.includes(path.sep) || !WIRING_FILE.test(name)) context.report({ node, messageId: 'notWiring', data: { name } });
      },
      ClassDeclaration: logic('a class'),
      ClassExpression: logic('a class'),
      WhileStatement: logic('a while loop'),
      DoWhileStatement: logic('a do loop'),
      'Literal[regex]': logic('a regular expression'),
      'NewExpression[callee.name="RegExp"]': logic('a regular expression'),
      ...importVisitors((node, source) => {
        // a type (a Server a function returns) is no conversation
        if (node.importKind === 'type' || node.exportKind === 'type') return;
        if (typeof source === 'string' && TALKS_OUT.some((re) => re.test(source))) logic(`the I/O library ${source}`)(node);
      }),
    };
  },
);

/**
 * Adapters are siblings: src/http, src/stream, src/gateway, src/portal, src/db and src/client each
 * turn the engine into one way in or out, and none imports another (issue 10 removed src/stream's
 * use of src/http; issue 12's gateway, src/stream's JSON scanner). What two adapters share lives in
 * a neutral module (src/errors, src/audit, src/identity, src/json-bytes, …), and neutral modules
 * import no adapter. Only the wiring (src/app, src/cli) puts adapters together, and neither an
 * adapter nor a neutral module imports the wiring (issue 18: src/portal's version store and engine
 * holder moved to src/control; what it needs of src/app comes in through its ConfigPort).
 */
const ADAPTERS = ['http', 'stream', 'gateway', 'portal', 'db', 'client'];

/**
 * A module's errors.ts — its error type, made from its codes (src/errors/codes.ts) — is public:
 * any layer may catch a layer's errors. It imports nothing but the engine's front door and
 * src/errors/codes.ts, which src/errors/catalog.ts gathers without importing any layer.
 */
function isErrorsModule(target, cwd) {
  const rel = path.relative(path.join(cwd, 'src'), target).split(path.sep);
  return rel.length === 2 && rel[1] === 'errors.ts';
}
// discover: the detectors of personal data and the proposals `veil discover` writes; drift-guard:
// the unmapped guard the stream and the gateway share, over discover's detectors; the stream's configuration
// its record formats (discover/record-formats.ts); kafka: Kafka's one home — the ports, both client
// adapters, the client settings every connection goes through, the compacted-topic log of src/control
// and src/subjects, the topic sampler of `veil discover` (veil/kafka-home)
const NEUTRAL = [
  'errors',
  'audit',
  'identity',
  'keystore',
  'json-bytes',
  'observability',
  'control',
  'env',
  'subjects',
  'discover',
  'drift-guard',
  'file-lock',
  'kafka',
  'native',
];
const WIRING = ['app', 'cli'];

const adapterIsolation = problemRule(
  'an adapter (src/http, src/stream, src/gateway, …) imports no sibling adapter and no wiring (src/app, src/cli); neutral modules import neither',
  {
    sibling:
      "src/{{from}} must not import '{{source}}' from src/{{to}}: adapters do not depend on each other; move what they share into a neutral module (e.g. src/json-bytes, src/errors)",
    neutral: "src/{{from}} is shared by the adapters and must not import '{{source}}' from the adapter src/{{to}}",
    wiring:
      "src/{{from}} must not import '{{source}}' from src/{{to}}: the wiring (src/app, src/cli) depends on adapters and neutral modules, never the reverse; take what is needed as a dependency (e.g. src/portal's ConfigPort) or move it into a neutral module (e.g. src/control)",
    unclassified: 'src/{{from}} is in no layer: add it to ADAPTERS, NEUTRAL or WIRING in tools/eslint-plugin-veil.js (and to docs/design.md §1)',
  },
  (context) => {
    const src = path.join(context.cwd, 'src') + path.sep;
    const topOf = (file) => (file.startsWith(src) ? file.slice(src.length).split(path.sep)[0] : undefined);
    const from = topOf(context.filename);
    const isAdapter = ADAPTERS.includes(from);
    // every folder of src is in a layer: a new one fails lint until it is placed
    if (
      from !== undefined &&
      context.filename.slice(src.length).includes(path.sep) &&
      !isAdapter &&
      !NEUTRAL.includes(from) &&
      !WIRING.includes(from) &&
      from !== 'engine'
    ) {
      return { Program: (node) => context.report({ node, messageId: 'unclassified', data: { from } }) };
    }
    if (!isAdapter && !NEUTRAL.includes(from)) return {};
    const check = (node, source) => {
      if (typeof source !== 'string' || !source.startsWith('.')) return;
      const target = path.resolve(path.dirname(context.filename), source);
      const to = topOf(target);
      if (to === undefined || to === from || isErrorsModule(target, context.cwd)) return;
      if (WIRING.includes(to)) context.report({ node, messageId: 'wiring', data: { from, to, source } });
      else if (ADAPTERS.includes(to)) context.report({ node, messageId: isAdapter ? 'sibling' : 'neutral', data: { from, to, source } });
    };
    return importVisitors(check);
  },
);

/**
 * src/stream's folders and their front doors (issue 30): config (the pipelines' and responders' configuration sections), serde, registry, protect (the
 * protect pipeline and its pieces), unprotect (responder, client, protocol). Code outside a folder
 * imports only its index.ts; outside src/stream, only the folders' index.ts and the stream's
 * error type (stream-error.ts: StreamError; its codes are in src/errors/codes.ts) — the other files at the root of
 * src/stream (STREAM_ROOT) are shared by its folders. A folder or root file not listed here fails
 * lint until it is placed. (Kafka itself lives in src/kafka: veil/kafka-home.) Unit tests under
 * test/stream may reach the internals they test.
 */
const STREAM_FOLDERS = ['config', 'serde', 'registry', 'protect', 'unprotect'];
const STREAM_ROOT = ['stream-error.ts', 'log.ts', 'memo.ts'];
const STREAM_PUBLIC_ROOT = ['stream-error.ts'];
const streamFrontDoors = problemRule(
  "src/stream's folders are imported only through their index.ts",
  {
    internal: "'{{source}}' reaches into src/stream/{{folder}}: import from src/stream/{{folder}}/index.ts, its front door",
    rootInternal: "'{{source}}' is shared inside src/stream only: outside it, import a folder's index.ts (or the stream's error type, stream-error.ts)",
    unknownFolder:
      "src/stream/{{folder}} is not one of the stream's folders ({{folders}}): add it, with an index.ts, to STREAM_FOLDERS in tools/eslint-plugin-veil.js and to docs/design.md",
    unknownRoot: 'src/stream/{{name}}: the root of src/stream holds only {{root}}; put the file in the folder it belongs to',
  },
  (context) => {
    const file = context.filename;
    const stream = path.join(context.cwd, 'src', 'stream');
    if (file.startsWith(path.join(context.cwd, 'test', 'stream') + path.sep)) return {};
    const inStream = file.startsWith(stream + path.sep);
    const folderOf = (abs) => {
      const parts = path.relative(stream, abs).split(path.sep);
      return parts.length > 1 && !parts[0].startsWith('..') ? parts[0] : undefined;
    };
    const own = inStream ? folderOf(file) : undefined;
    const checks = [];
    if (inStream) {
      if (own !== undefined && !STREAM_FOLDERS.includes(own)) {
        checks.push((node) => context.report({ node, messageId: 'unknownFolder', data: { folder: own, folders: STREAM_FOLDERS.join(', ') } }));
      }
      const name = path.relative(stream, file);
      if (own === undefined && !STREAM_ROOT.includes(name))
        checks.push((node) => context.report({ node, messageId: 'unknownRoot', data: { name, root: STREAM_ROOT.join(', ') } }));
    }
    const check = (node, source) => {
      if (typeof source !== 'string' || !source.startsWith('.')) return;
      const target = path.resolve(path.dirname(file), source);
      if (!target.startsWith(stream + path.sep)) return;
      const folder = folderOf(target);
      if (folder === undefined) {
        if (!inStream && !STREAM_PUBLIC_ROOT.includes(path.basename(target))) context.report({ node, messageId: 'rootInternal', data: { source } });
      } else if (folder !== own && target !== path.join(stream, folder, 'index.ts')) {
        context.report({ node, messageId: 'internal', data: { source, folder } });
      }
    };
    return {
      Program: (node) => checks.forEach((report) => report(node)),
      ...importVisitors(check),
    };
  },
);

/**
 * Kafka's one home (issue 40): kafkajs and the librdkafka binding are imported only under
 * src/kafka — by its kafkajs-*.ts and librdkafka-*.ts files respectively, so no type of one client
 * reaches the other's adapter or the ports — and source outside src/kafka imports it only through
 * src/kafka/index.ts. So every connection goes through the one client-settings module
 * (src/kafka/client-settings.ts) and a security setting is added once. Tests may reach the
 * internals they test; benches and scripts use the front door.
 */
const CLIENT_LIBRARIES = [
  { test: (source) => source === 'kafkajs' || source.startsWith('kafkajs/'), adapter: /^kafkajs-[a-z0-9-]+\.ts$/, name: 'kafkajs' },
  { test: (source) => source.startsWith('@confluentinc/kafka-javascript'), adapter: /^librdkafka-[a-z0-9-]+\.ts$/, name: 'librdkafka' },
];
const kafkaHome = problemRule(
  'kafkajs and librdkafka are imported only in src/kafka (each by its own adapter files); src/kafka only through its index.ts',
  {
    client: "'{{source}}' is the {{name}} client: only src/kafka/{{name}}-*.ts imports it; use the ports and settings of src/kafka/index.ts",
    internal: "'{{source}}' reaches into src/kafka: import from src/kafka/index.ts, its front door",
  },
  (context) => {
    const file = context.filename;
    const home = path.join(context.cwd, 'src', 'kafka');
    const inSrc = file.startsWith(path.join(context.cwd, 'src') + path.sep);
    const inHome = file.startsWith(home + path.sep);
    if (file.startsWith(path.join(context.cwd, 'test') + path.sep)) return {};
    return importVisitors((node, source) => {
      if (typeof source !== 'string') return;
      if (!source.startsWith('.')) {
        const lib = CLIENT_LIBRARIES.find((l) => l.test(source));
        if (lib && inSrc && !(inHome && path.dirname(file) === home && lib.adapter.test(path.basename(file))))
          context.report({ node, messageId: 'client', data: { source, name: lib.name } });
        return;
      }
      const target = path.resolve(path.dirname(file), source);
      if (!inHome && target.startsWith(home + path.sep) && target !== path.join(home, 'index.ts') && !isErrorsModule(target, context.cwd))
        context.report({ node, messageId: 'internal', data: { source } });
    });
  },
);

export default {
  rules: {
    'kafka-home': kafkaHome,
    'stream-front-doors': streamFrontDoors,
    'engine-layering': engineLayering,
    'engine-front-door': engineFrontDoor,
    'front-doors': frontDoors,
    'wiring-only': wiringOnly,
    'adapter-isolation': adapterIsolation,
  },
};
