// ESLint's flat config for the dashboard (`npm run lint`). CommonJS: package.json declares no "type", and
// flipping it to "module" would change how esbuild reads src/*.js.
const js = require('@eslint/js');
const react = require('eslint-plugin-react');
const reactHooks = require('eslint-plugin-react-hooks');
const globals = require('globals');

module.exports = [
  { ignores: ['dist/', 'node_modules/'] },
  { linterOptions: { reportUnusedDisableDirectives: 'error' } },
  {
    files: ['src/**/*.{js,jsx}'],
    plugins: { react, 'react-hooks': reactHooks },
    languageOptions: {
      ecmaVersion: 'latest',
      sourceType: 'module',
      parserOptions: { ecmaFeatures: { jsx: true } },
      globals: { ...globals.browser },
    },
    settings: { react: { version: '18.3' } },
    rules: {
      ...js.configs.recommended.rules,
      ...react.configs.flat.recommended.rules,
      // build.mjs compiles with jsx: 'automatic': components need no React in scope.
      ...react.configs.flat['jsx-runtime'].rules,
      // `const { omitted, ...rest } = o` is how a copy leaves a field out
      'no-unused-vars': ['error', { ignoreRestSiblings: true }],
      'react/prop-types': 'off', // plain JavaScript without PropTypes: no component declares them
      'react-hooks/rules-of-hooks': 'error',
      'react-hooks/exhaustive-deps': 'warn',
    },
  },
  {
    files: ['*.{js,mjs}', 'test/**/*.{js,mjs}', 'test-support/**/*.{js,mjs}'],
    ...js.configs.recommended,
    languageOptions: { ecmaVersion: 'latest', sourceType: 'module', globals: { ...globals.node } },
  },
  {
    files: ['eslint.config.js'],
    languageOptions: { sourceType: 'commonjs' },
  },
];
