/** The contributions in package.json agree with the code: every setting, command and default. */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';

import { buildInitializationOptions, DEFAULT_OPTIONS, SERVER_SETTING_KEYS } from '../config';
import { KNOWN_GPU_IDS } from '../gpus';

interface Manifest {
    main: string;
    publisher: string;
    license: string;
    repository: unknown;
    engines: { vscode: string };
    dependencies: Record<string, string>;
    activationEvents: string[];
    contributes: {
        configuration: { properties: Record<string, { default?: unknown; description?: string; markdownDescription?: string }> };
        commands: { command: string; title: string }[];
        languages: { id: string; extensions: string[]; configuration: string }[];
    };
}

const root = path.join(__dirname, '..', '..');
const manifest = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as Manifest;
const properties = manifest.contributes.configuration.properties;

describe('package.json', () => {
    it('contributes every setting, each with a description', () => {
        const expected = [
            ...SERVER_SETTING_KEYS.map((k) => `kerncast.${k}`),
            'kerncast.server.command',
            'kerncast.trace.server',
            'kerncast.lineCosts.enabled',
        ];
        assert.deepEqual(Object.keys(properties).sort(), [...expected].sort());
        for (const [id, schema] of Object.entries(properties)) {
            const text = schema.markdownDescription ?? schema.description ?? '';
            assert.ok(text.length > 20, `${id} has no real description`);
        }
    });

    it('has the server defaults as setting defaults', () => {
        const { options, problems } = buildInitializationOptions((key) => properties[`kerncast.${key}`].default);
        assert.deepEqual(problems, []);
        assert.deepEqual(options, DEFAULT_OPTIONS);
    });

    it('names every shipped GPU profile in the gpu setting description', () => {
        const text = properties['kerncast.gpu'].markdownDescription ?? '';
        for (const id of KNOWN_GPU_IDS) {
            assert.ok(text.includes(`\`${id}\``), id);
        }
    });

    it('contributes the commands and the PTX language', () => {
        assert.deepEqual(
            manifest.contributes.commands.map((c) => c.command).sort(),
            ['kerncast.restartServer', 'kerncast.selectGpu', 'kerncast.showReport', 'kerncast.showReportPage'],
        );
        const ptx = manifest.contributes.languages.find((l) => l.id === 'ptx');
        if (!ptx) {
            throw new Error('no ptx language');
        }
        assert.deepEqual(ptx.extensions, ['.ptx']);
        const langConfig = JSON.parse(fs.readFileSync(path.join(root, ptx.configuration), 'utf8')) as {
            comments: { lineComment: string };
        };
        assert.equal(langConfig.comments.lineComment, '//');
        for (const language of ['cuda-cpp', 'cuda', 'ptx']) {
            assert.ok(manifest.activationEvents.includes(`onLanguage:${language}`), language);
        }
    });

    it('can be packaged without prompts', () => {
        assert.equal(manifest.publisher, 'kerncast');
        assert.equal(manifest.license, 'MIT');
        assert.ok(manifest.repository);
        assert.ok(fs.existsSync(path.join(root, 'LICENSE')));
        assert.equal(manifest.main, './dist/extension.js');
        assert.equal(manifest.engines.vscode, '^1.82.0');
        assert.match(manifest.dependencies['vscode-languageclient'], /^\^?9\./);
    });
});

describe('pure modules', () => {
    it('do not load vscode', () => {
        for (const name of ['config', 'serverCommand', 'gpus', 'report', 'webview', 'lineCosts']) {
            const js = fs.readFileSync(path.join(__dirname, '..', `${name}.js`), 'utf8');
            assert.doesNotMatch(js, /require\("vscode/, name);
        }
    });
});
