// Lint configuration (flat config): typescript-eslint's recommended rules with type information.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
    { ignores: ['out/**', 'dist/**', 'node_modules/**', '*.vsix'] },
    js.configs.recommended,
    ...tseslint.configs.recommendedTypeChecked,
    {
        files: ['src/**/*.ts'],
        languageOptions: {
            parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
        },
        rules: {
            eqeqeq: ['error', 'always'],
            curly: 'error',
            'no-restricted-imports': 'off',
            '@typescript-eslint/no-floating-promises': 'error',
            '@typescript-eslint/explicit-module-boundary-types': 'error',
        },
    },
    {
        // The pure modules must run without VS Code.
        files: ['src/config.ts', 'src/serverCommand.ts', 'src/gpus.ts', 'src/report.ts', 'src/test/**/*.ts'],
        rules: { 'no-restricted-imports': ['error', { paths: ['vscode', 'vscode-languageclient'], patterns: ['vscode-languageclient/*'] }] },
    },
    {
        // node:test's describe/it return promises that the runner awaits.
        files: ['src/test/**/*.ts'],
        rules: { '@typescript-eslint/no-floating-promises': 'off' },
    },
    {
        files: ['**/*.mjs'],
        ...tseslint.configs.disableTypeChecked,
    },
);
