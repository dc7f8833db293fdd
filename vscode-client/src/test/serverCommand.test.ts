import * as assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import {
    findOnPath,
    formatCommand,
    resolveServerCommand,
    ResolveInput,
    scriptNextToInterpreter,
    settingWords,
    splitCommandLine,
    startFailureMessage,
    withoutClientCommands,
} from '../serverCommand';

function machine(files: string[]): (file: string) => boolean {
    const set = new Set(files);
    return (file) => set.has(file);
}

function input(overrides: Partial<ResolveInput>): ResolveInput {
    return {
        setting: [],
        platform: 'linux',
        env: { PATH: '/usr/local/bin:/usr/bin' },
        isFile: machine([]),
        ...overrides,
    };
}

describe('resolveServerCommand', () => {
    it('uses the setting first, as given (array)', () => {
        const cmd = resolveServerCommand(
            input({
                setting: ['/opt/venv/bin/python', '-m', 'kerncast.server', 'lsp'],
                pythonPath: '/env/bin/python',
                isFile: machine(['/env/bin/kerncast', '/usr/bin/kerncast']),
            }),
        );
        assert.deepEqual(cmd, {
            command: '/opt/venv/bin/python',
            args: ['-m', 'kerncast.server', 'lsp'],
            source: 'setting',
            found: true,
        });
    });

    it('splits a string setting and expands variables', () => {
        const cmd = resolveServerCommand(
            input({
                setting: '"${workspaceFolder}/my env/bin/kerncast" lsp',
                pathContext: { workspaceFolder: '/ws' },
            }),
        );
        assert.equal(cmd.command, '/ws/my env/bin/kerncast');
        assert.deepEqual(cmd.args, ['lsp']);
        assert.equal(cmd.source, 'setting');
    });

    it('uses the kerncast next to the selected interpreter when the setting is empty', () => {
        for (const setting of [[], '', '   ', null, undefined]) {
            const cmd = resolveServerCommand(
                input({
                    setting,
                    pythonPath: '/home/u/.venv/bin/python',
                    isFile: machine(['/home/u/.venv/bin/kerncast', '/usr/bin/kerncast']),
                }),
            );
            assert.deepEqual(cmd, {
                command: '/home/u/.venv/bin/kerncast',
                args: ['lsp'],
                source: 'python',
                found: true,
            });
        }
    });

    it('falls back to PATH when the interpreter has no kerncast', () => {
        const cmd = resolveServerCommand(
            input({ pythonPath: '/usr/bin/python3', isFile: machine(['/usr/local/bin/kerncast']) }),
        );
        assert.deepEqual(cmd, { command: '/usr/local/bin/kerncast', args: ['lsp'], source: 'path', found: true });
    });

    it('says when nothing is found', () => {
        const cmd = resolveServerCommand(input({}));
        assert.deepEqual(cmd, { command: 'kerncast', args: ['lsp'], source: 'default', found: false });
    });

    it('rejects a setting of the wrong type', () => {
        assert.throws(() => resolveServerCommand(input({ setting: 42 })), /string or an array/);
        assert.throws(() => resolveServerCommand(input({ setting: ['kerncast', 3] })), /string or an array/);
    });

    it('finds Windows scripts with PATHEXT and in Scripts\\ of a base interpreter', () => {
        const env = { Path: 'C:\\Tools;C:\\Python\\Scripts', PATHEXT: '.COM;.EXE;.BAT' };
        assert.equal(
            findOnPath('kerncast', 'win32', env, machine(['C:\\Python\\Scripts\\kerncast.exe'])),
            'C:\\Python\\Scripts\\kerncast.exe',
        );
        assert.equal(
            scriptNextToInterpreter('C:\\Miniconda\\python.exe', 'win32', machine(['C:\\Miniconda\\Scripts\\kerncast.exe'])),
            'C:\\Miniconda\\Scripts\\kerncast.exe',
        );
        assert.equal(
            scriptNextToInterpreter('C:\\proj\\.venv\\Scripts\\python.exe', 'win32', machine(['C:\\proj\\.venv\\Scripts\\kerncast.exe'])),
            'C:\\proj\\.venv\\Scripts\\kerncast.exe',
        );
        const cmd = resolveServerCommand({
            setting: [],
            platform: 'win32',
            env,
            pythonPath: 'C:\\proj\\.venv\\Scripts\\python.exe',
            isFile: machine(['C:\\proj\\.venv\\Scripts\\kerncast.exe']),
        });
        assert.equal(cmd.source, 'python');
    });

    it('skips empty PATH entries and does not match directories by name alone', () => {
        assert.equal(findOnPath('kerncast', 'linux', { PATH: '::/opt/bin' }, machine(['/opt/bin/kerncast'])), '/opt/bin/kerncast');
        assert.equal(findOnPath('kerncast', 'linux', {}, machine(['/opt/bin/kerncast'])), undefined);
    });
});

describe('splitCommandLine', () => {
    it('splits on whitespace and honours quotes and escapes', () => {
        assert.deepEqual(splitCommandLine('kerncast lsp'), ['kerncast', 'lsp']);
        assert.deepEqual(splitCommandLine('  a   b\tc  '), ['a', 'b', 'c']);
        assert.deepEqual(splitCommandLine(`'/my dir/kerncast' "a b" c\\ d`), ['/my dir/kerncast', 'a b', 'c d']);
        assert.deepEqual(splitCommandLine('"say \\"hi\\""'), ['say "hi"']);
        assert.deepEqual(splitCommandLine('C:\\venv\\Scripts\\kerncast.exe lsp'), ['C:\\venv\\Scripts\\kerncast.exe', 'lsp']);
        assert.deepEqual(splitCommandLine('""'), ['']);
        assert.deepEqual(splitCommandLine(''), []);
    });

    it('rejects an unterminated quote', () => {
        assert.throws(() => splitCommandLine('"kerncast lsp'), /unterminated/);
    });

    it('treats an empty setting as automatic', () => {
        assert.equal(settingWords(''), undefined);
        assert.equal(settingWords([]), undefined);
        assert.equal(settingWords(['']), undefined);
        assert.deepEqual(settingWords('kerncast lsp --log-level debug'), ['kerncast', 'lsp', '--log-level', 'debug']);
    });
});

describe('messages', () => {
    it('formats a command line with quoting where needed', () => {
        assert.equal(formatCommand({ command: '/a b/kerncast', args: ['lsp'] }), '"/a b/kerncast" lsp');
    });

    it('names the fix in the start failure message', () => {
        const auto = startFailureMessage(
            { command: '/usr/bin/kerncast', args: ['lsp'], source: 'path', found: true },
            'exited with code 2',
        );
        assert.match(auto, /pip install 'kerncast\[cuda\]'/);
        assert.match(auto, /kerncast\.server\.command/);
        assert.match(auto, /exited with code 2/);
        const fromSetting = startFailureMessage(
            { command: 'nope', args: [], source: 'setting', found: true },
            'spawn nope ENOENT',
        );
        assert.match(fromSetting, /Check the kerncast\.server\.command setting/);
    });
});

describe('withoutClientCommands', () => {
    it('drops the commands the extension implements', () => {
        assert.deepEqual(
            withoutClientCommands(['kerncast.showReport', 'kerncast.listGpus', 'kerncast.applyFix'], new Set(['kerncast.showReport'])),
            ['kerncast.listGpus', 'kerncast.applyFix'],
        );
    });
});
