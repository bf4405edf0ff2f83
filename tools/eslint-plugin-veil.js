// veil's architecture rules for ESLint.
import path from 'node:path';

/** What src/engine may import besides its own files: pure computation only. */
const ENGINE_ALLOWED = [/^zod$/, /^yaml$/, /^@noble\/(ciphers|hashes)\//, /^node:crypto$/];

const engineLayering = {
  meta: {
    type: 'problem',
    docs: { description: 'src/engine is pure: it imports only its own files and pure libraries (no I/O, clock, env)' },
    schema: [],
    messages: {
      outside: "src/engine must not import '{{source}}': it lies outside src/engine (others depend on the engine, never the reverse)",
      impure: "src/engine must not import '{{source}}': the engine is pure (no I/O, clock or environment); allowed: zod, yaml, @noble/*, node:crypto",
    },
  },
  create(context) {
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
    return {
      ImportDeclaration: (node) => check(node, node.source.value),
      ExportNamedDeclaration: (node) => node.source && check(node, node.source.value),
      ExportAllDeclaration: (node) => check(node, node.source.value),
      ImportExpression: (node) => check(node, node.source.type === 'Literal' ? node.source.value : undefined),
    };
  },
};

/**
 * The engine's front door: code outside src/engine imports the engine only through
 * src/engine/index.ts. Tests under test/engine test the internals (crypto vectors, transformers)
 * and may reach them.
 */
const engineFrontDoor = {
  meta: {
    type: 'problem',
    docs: { description: 'outside src/engine, import the engine only from src/engine/index.ts' },
    schema: [],
    messages: {
      internal: "'{{source}}' reaches into src/engine: import from src/engine/index.ts, the engine's front door (only test/engine may reach the internals it tests)",
    },
  },
  create(context) {
    const file = context.filename;
    const engineDir = path.join(context.cwd, 'src', 'engine');
    const frontDoor = path.join(engineDir, 'index.ts');
    const insiders = [engineDir + path.sep, path.join(context.cwd, 'test', 'engine') + path.sep];
    if (insiders.some((dir) => file.startsWith(dir))) return {};
    const check = (node, source) => {
      if (typeof source !== 'string' || !source.startsWith('.')) return;
      const target = path.resolve(path.dirname(file), source);
      if ((target === engineDir || target.startsWith(engineDir + path.sep)) && target !== frontDoor) {
        context.report({ node, messageId: 'internal', data: { source } });
      }
    };
    return {
      ImportDeclaration: (node) => check(node, node.source.value),
      ExportNamedDeclaration: (node) => node.source && check(node, node.source.value),
      ExportAllDeclaration: (node) => check(node, node.source.value),
      ImportExpression: (node) => check(node, node.source.type === 'Literal' ? node.source.value : undefined),
    };
  },
};

export default { rules: { 'engine-layering': engineLayering, 'engine-front-door': engineFrontDoor } };
