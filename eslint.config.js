import js from '@eslint/js';
import stylistic from '@stylistic/eslint-plugin';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['**/dist/', 'node_modules/', 'bench/node_modules/', 'bench/results/', 'coverage/', '.tmp/'] },
  js.configs.recommended,
  // The formatter: ESLint Stylistic, fixed with `npm run format` and checked by `npm test`.
  stylistic.configs.customize({ indent: 2, quotes: 'single', semi: true, commaDangle: 'always-multiline', braceStyle: '1tbs', arrowParens: true, quoteProps: 'as-needed' }),
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      globals: {
        process: 'readonly', Buffer: 'readonly', console: 'readonly', URL: 'readonly', setTimeout: 'readonly',
        clearTimeout: 'readonly', setInterval: 'readonly', clearInterval: 'readonly', setImmediate: 'readonly',
        TextEncoder: 'readonly', TextDecoder: 'readonly', fetch: 'readonly', Request: 'readonly', Response: 'readonly',
        Headers: 'readonly', AbortController: 'readonly', AbortSignal: 'readonly', crypto: 'readonly', queueMicrotask: 'readonly',
        performance: 'readonly', structuredClone: 'readonly', document: 'readonly', window: 'readonly', EventSource: 'readonly',
        sessionStorage: 'readonly', navigator: 'readonly', HTMLElement: 'readonly',
      },
    },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_' }],
      '@typescript-eslint/no-non-null-assertion': 'off',
      '@stylistic/operator-linebreak': ['error', 'after', { overrides: { '?': 'before', ':': 'before', '|': 'before', '&': 'before' } }],
      '@stylistic/quotes': ['error', 'single', { avoidEscape: true, allowTemplateLiterals: true }],
      '@stylistic/max-statements-per-line': ['error', { max: 2 }],
      'max-len': ['error', { code: 160, ignoreUrls: true, ignoreStrings: true, ignoreTemplateLiterals: true, ignoreRegExpLiterals: true }],
    },
  },
  {
    // The debugger page's script runs in the browser (its types are checked by its own tsconfig.json, with the DOM).
    files: ['packages/forwarder/src/debugger/*.js', 'packages/forwarder/src/debugger/tabs/*.js'],
    languageOptions: {
      globals: { URLSearchParams: 'readonly', HTMLInputElement: 'readonly', HTMLSelectElement: 'readonly', HTMLTextAreaElement: 'readonly', HTMLButtonElement: 'readonly' },
    },
  },
  {
    files: ['test/**/*.ts', 'packages/*/test/**/*.ts'],
    rules: { '@typescript-eslint/no-unused-expressions': 'off', '@typescript-eslint/no-explicit-any': 'off' },
  },
);
