// Lint gate run by `npm run lint` (and so by `npm test` and CI). Type-aware rules from
// typescript-eslint; formatting is Prettier's job (eslint-config-prettier turns style rules off).
// Workflow code must stay deterministic: no Node built-ins and no value imports of adapters
// (`src/**`, `activities/**`) under workflows/ — type-only imports are fine.
import js from '@eslint/js';
import prettier from 'eslint-config-prettier';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['node_modules/', '**/dist/', '.tools/', '.data/', 'test-results/', 'bench/results*.json', 'bench/load/last-run.json'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      globals: { ...globals.node },
      parserOptions: {
        projectService: {
          allowDefaultProject: [
            '*.js',
            '*.mjs',
            'scripts/*.mjs',
            'bin/*.mjs',
            'test/faults/*.mjs',
            'packages/*/bin/*.mjs',
            'packages/conformance/vectors/*.mjs',
            'packages/*/examples/*.mjs',
          ],
          maximumDefaultProjectFileMatchCount_THIS_WILL_SLOW_DOWN_LINTING: 32,
        },
        tsconfigRootDir: import.meta.dirname,
      },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: false }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
      '@typescript-eslint/no-explicit-any': 'error',
      'object-shorthand': ['error', 'always'],
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
      // escaping and tests of it match control characters on purpose
      'no-control-regex': 'off',
      'no-console': ['error', { allow: ['error', 'warn'] }],
    },
  },
  {
    files: ['workflows/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: ['node:*'], message: 'Workflow code is deterministic: no Node built-ins.' },
            {
              group: ['../src/**', '../activities/**'],
              allowTypeImports: true,
              message: 'Workflows import adapters and activities as types only.',
            },
          ],
        },
      ],
      'no-restricted-globals': ['error', 'setTimeout', 'setInterval', 'process'],
    },
  },
  prettier,
);
