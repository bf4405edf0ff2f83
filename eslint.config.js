// Lint: typescript-eslint's recommended rules plus veil's architecture rules.
import tseslint from 'typescript-eslint';
import veil from './tools/eslint-plugin-veil.js';

export default tseslint.config(
  { ignores: ['node_modules/**', 'dist/**', 'packages/*/dist/**', 'coverage/**', '.veil/**'] },
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-non-null-assertion': 'off',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
    },
  },
  {
    // Layering: the engine is pure (config in, decisions and values out) and depends on nothing
    // outside itself; everything else depends on it, never the reverse.
    files: ['src/engine/**/*.ts'],
    plugins: { veil },
    rules: {
      'veil/engine-layering': 'error',
      'no-restricted-globals': [
        'error',
        { name: 'process', message: 'src/engine is pure: no environment or process state' },
        { name: 'fetch', message: 'src/engine is pure: no I/O' },
        { name: 'setTimeout', message: 'src/engine is pure: no clock' },
        { name: 'setInterval', message: 'src/engine is pure: no clock' },
      ],
      'no-restricted-syntax': [
        'error',
        { selector: "MemberExpression[object.name='Date'][property.name='now']", message: 'src/engine is pure: no clock (inject one)' },
        { selector: "NewExpression[callee.name='Date'][arguments.length=0]", message: 'src/engine is pure: no clock (inject one)' },
        { selector: "MemberExpression[object.name='performance'][property.name='now']", message: 'src/engine is pure: no clock' },
      ],
    },
  },
  {
    // The engine's front door: outside src/engine, only src/engine/index.ts is imported; tests under
    // test/engine may reach the internals they test (crypto vectors, transformers).
    files: ['**/*.ts', '**/*.js'],
    plugins: { veil },
    rules: { 'veil/engine-front-door': 'error' },
  },
  {
    // src/stream's folders (config, serde, registry, protect, unprotect) are imported only through
    // their index.ts; unit tests under test/stream may reach the internals they test.
    files: ['**/*.ts', '**/*.js'],
    plugins: { veil },
    rules: { 'veil/stream-front-doors': 'error' },
  },
  {
    // Kafka's one home: kafkajs and the librdkafka binding only in src/kafka (each by its adapter's
    // files), src/kafka only through its index.ts; unit tests under test/kafka reach its internals.
    files: ['**/*.ts', '**/*.js'],
    plugins: { veil },
    rules: { 'veil/kafka-home': 'error' },
  },
  {
    // Adapters (src/http, src/stream, src/gateway, src/portal, src/db, src/client) import no sibling
    // adapter, and the neutral modules they share import none; neither imports the wiring (src/app,
    // src/cli), which alone puts adapters together: tools/eslint-plugin-veil.js.
    files: ['src/**/*.ts'],
    plugins: { veil },
    rules: { 'veil/adapter-isolation': 'error', 'veil/front-doors': 'error', 'veil/wiring-only': 'error' },
  },
  {
    // Key bytes never leave their module: only crypto-using transformers and the keystore may
    // unwrap a SecretKey (the engine's front door re-exports revealKeyBytes for the keystore).
    files: ['src/**/*.ts', 'test/**/*.ts', 'bench/**/*.ts'],
    ignores: ['src/engine/transformers/**', 'src/engine/key-access/**', 'src/engine/index.ts', 'src/keystore/**', 'test/**', 'bench/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['**/key-access/secret-key.ts', '**/engine/index.ts'],
              importNames: ['revealKeyBytes'],
              message: 'key bytes stay in the crypto and keystore modules',
            },
          ],
        },
      ],
    },
  },
);
