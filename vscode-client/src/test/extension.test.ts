/**
 * Smoke test of the extension as shipped (the esbuild bundle in dist/) under plain node: a fake `vscode`
 * module, the real language client, and a fake server process that records what it receives.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';

import { installFakeVscode } from './fakeVscode';

const fakeServer = path.join(__dirname, 'fixtures', 'fakeServer.js');
const bundle = path.join(__dirname, '..', '..', 'dist', 'extension.js');
const logDir = fs.mkdtempSync(path.join(os.tmpdir(), 'kerncast-vscode-'));
const logFile = path.join(logDir, 'server.jsonl');
process.env.KERNCAST_FAKE_LOG = logFile;

const { world, uninstall } = installFakeVscode({
    'kerncast.server.command': [process.execPath, fakeServer],
    'kerncast.gpu': 'v100',
    'kerncast.thresholds.lowOccupancy': 0.3,
    'kerncast.launch': { saxpy: { grid: 4096, block: 256 } },
});

interface Received {
    method: string;
    params: Record<string, unknown> | null;
}

function received(method?: string): Received[] {
    if (!fs.existsSync(logFile)) {
        return [];
    }
    return fs
        .readFileSync(logFile, 'utf8')
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => JSON.parse(l) as Received)
        .filter((r) => method === undefined || r.method === method);
}

async function waitFor(what: string, condition: () => boolean, ms = 10000): Promise<void> {
    const start = Date.now();
    while (!condition()) {
        if (Date.now() - start > ms) {
            throw new Error(`timed out waiting for ${what}\noutput:\n${world.output.join('\n')}`);
        }
        await new Promise((r) => setTimeout(r, 20));
    }
}

function run(command: string, ...args: unknown[]): Promise<unknown> {
    const fn = world.commands.get(command);
    assert.ok(fn, `command ${command} is not registered`);
    return Promise.resolve(fn(...args));
}

type ExtensionModule = typeof import('../extension');
let extension: ExtensionModule;
const context = { subscriptions: [] as { dispose(): unknown }[] };

describe('extension with a fake VS Code and a fake server', () => {
    before(async () => {
        extension = (await import(bundle)) as ExtensionModule;
        extension.activate(context as never);
        await waitFor('the server to be initialized', () => received('initialized').length === 1);
        await waitFor('the running status', () => world.statusItems[0]?.text === '$(pulse) Kerncast: V100');
    });

    after(async () => {
        await extension.deactivate();
        for (const d of context.subscriptions) {
            d.dispose();
        }
        uninstall();
        fs.rmSync(logDir, { recursive: true, force: true });
    });

    it('starts the server with the settings as initializationOptions', () => {
        const [init] = received('initialize');
        const options = init.params?.initializationOptions as Record<string, unknown>;
        assert.equal(options.gpu, 'v100');
        assert.equal(options.arch, null);
        assert.deepEqual(options.launch, { saxpy: { grid: 4096, block: 256 } });
        assert.deepEqual(options.thresholds, {
            uncoalescedExcessPercent: 25,
            bankConflictWays: 2,
            energyHotspotShare: 0.2,
            lowOccupancy: 0.3,
        });
        assert.deepEqual(world.messages, []);
    });

    it('keeps its own kerncast.showReport although the server advertises it', () => {
        for (const id of ['kerncast.selectGpu', 'kerncast.showReport', 'kerncast.restartServer', 'kerncast.listGpus']) {
            assert.ok(world.commands.has(id), id);
        }
        assert.equal(world.statusItems[0].command, 'kerncast.selectGpu');
        assert.equal(world.statusItems[0].visible, true);
    });

    it('picks the GPU from the server list and sends the change', async () => {
        let offered: string[] = [];
        world.quickPick = (items) => {
            offered = items.map((i) => i.label);
            return items.find((i) => (i as { gpuId?: string }).gpuId === 'h100');
        };
        await run('kerncast.selectGpu');
        assert.deepEqual(offered, ['$(check) Tesla V100', 'H100 SXM']);
        assert.equal(world.settings.get('kerncast.gpu'), 'h100');
        assert.equal(world.statusItems[0].text, '$(pulse) Kerncast: H100');
        await waitFor('didChangeConfiguration', () => received('workspace/didChangeConfiguration').length === 1);
        const [change] = received('workspace/didChangeConfiguration');
        const settings = change.params?.settings as { kerncast: Record<string, unknown> };
        assert.equal(settings.kerncast.gpu, 'h100');
        assert.equal((settings.kerncast.thresholds as Record<string, unknown>).lowOccupancy, 0.3);
    });

    it('switches to the GPU a "predict for GPU" code action names, without the picker', async () => {
        let picked = false;
        world.quickPick = (items) => {
            picked = true;
            return items[0];
        };
        const before = received('workspace/didChangeConfiguration').length;
        await run('kerncast.selectGpu', 'a100');
        assert.equal(picked, false);
        assert.equal(world.settings.get('kerncast.gpu'), 'a100');
        await waitFor('didChangeConfiguration', () => received('workspace/didChangeConfiguration').length > before);
        const change = received('workspace/didChangeConfiguration')[before];
        assert.equal((change.params?.settings as { kerncast: Record<string, unknown> }).kerncast.gpu, 'a100');
        await run('kerncast.selectGpu', { id: 'h100' }); // back, in the object form a GPU list item has
        assert.equal(picked, false);
        assert.equal(world.settings.get('kerncast.gpu'), 'h100');
        await waitFor('didChangeConfiguration', () => received('workspace/didChangeConfiguration').length > before + 1);
    });

    it('shows the report of a code lens kernel in a markdown preview', async () => {
        await run('kerncast.showReport', 'file:///ws/a.cu', 'saxpy');
        const call = received('workspace/executeCommand').find((r) => r.params?.command === 'kerncast.showReport');
        assert.deepEqual(call?.params?.arguments, ['file:///ws/a.cu', 'saxpy']);
        const preview = world.executed.find((e) => e.command === 'markdown.showPreviewToSide');
        assert.ok(preview);
        const uri = preview.args[0] as { scheme: string; path: string };
        assert.equal(uri.scheme, 'kerncast-report');
        assert.equal(uri.path, '/a.cu/saxpy.md');
        const text = world.providers.get('kerncast-report')?.provideTextDocumentContent(uri as never);
        assert.match(text ?? '', /^# Kernel `saxpy`/);
    });

    it('asks for the kernel under the cursor from the palette', async () => {
        world.setActiveEditor('file:///ws/b.cu', 'cuda-cpp', 3, 2);
        await run('kerncast.showReport');
        const calls = received('workspace/executeCommand').filter((r) => r.params?.command === 'kerncast.showReport');
        assert.deepEqual(calls.at(-1)?.params?.arguments, ['file:///ws/b.cu', { line: 3, character: 2 }]);
    });

    it('shows the report page in a webview with a strict policy and only its own script', async () => {
        await run('kerncast.showReportPage', 'file:///ws/a.cu');
        const call = received('workspace/executeCommand').find((r) => r.params?.command === 'kerncast.reportPage');
        assert.deepEqual(call?.params?.arguments, ['file:///ws/a.cu']);
        assert.equal(world.panels.length, 1);
        const [panel] = world.panels;
        assert.equal(panel.options.enableCommandUris, false);
        assert.equal(panel.options.enableForms, false);
        assert.deepEqual(panel.options.localResourceRoots, []);
        const policies = [...panel.html.matchAll(/http-equiv="Content-Security-Policy" content="([^"]*)"/g)];
        assert.equal(policies.length, 1, 'the page policy is replaced, not added to');
        const nonce = /script-src 'nonce-([^']+)'/.exec(policies[0][1])?.[1];
        assert.ok(nonce && /default-src 'none'/.test(policies[0][1]));
        assert.deepEqual([...panel.html.matchAll(/<script([^>]*)>/g)].map((m) => m[1]), [` nonce="${nonce}"`]);
        assert.ok(panel.html.includes('&lt;img src=x onerror=alert(1)&gt;'));
    });

    it('acts on no message of the page but a line of its own document', async () => {
        const [panel] = world.panels;
        const executedBefore = world.executed.length;
        for (const message of [
            { type: 'command', command: 'workbench.action.terminal.new' },
            { type: 'executeCommand', command: 'kerncast.selectGpu', arguments: ['h100'] },
            { type: 'open', path: '/etc/passwd' },
            { type: 'reveal', line: 'x' },
            { type: 'reveal', line: 99 },
        ]) {
            await panel.post(message);
        }
        assert.equal(world.executed.length, executedBefore, 'no command ran');
        assert.equal(world.shown.length, 0, 'no document shown');
        await panel.post({ type: 'reveal', line: 2, uri: 'file:///etc/passwd' });
        assert.deepEqual(world.shown.map((s) => s.uri), ['file:///ws/a.cu']);
        const selection = (world.shown[0].options as { selection: { startLine: number } }).selection;
        assert.equal(selection.startLine, 2);
        assert.ok(world.opened.every((u) => u === 'file:///ws/a.cu'), world.opened.join());
    });

    it('opens no file outside the workspace from the page', async () => {
        await run('kerncast.showReportPage', 'file:///etc/kernels.cu');
        const [panel] = world.panels;
        assert.equal(world.panels.length, 1, 'the same view shows the other file');
        const shown = world.shown.length;
        await panel.post({ type: 'reveal', line: 1 });
        assert.equal(world.shown.length, shown);
        assert.ok(!world.opened.includes('file:///etc/kernels.cu'));
    });

    it('says when a file has no report yet', async () => {
        world.messages.length = 0;
        await run('kerncast.showReportPage', 'file:///ws/never-analysed.cu');
        assert.match(world.messages.at(-1)?.text ?? '', /no report yet/);
    });

    it('marks hot lines by their share when new diagnostics arrive, and not when turned off', async () => {
        const editor = world.addVisibleEditor('file:///ws/a.cu', 10);
        world.fireDiagnostics(['file:///ws/a.cu']);
        await waitFor('the decorations', () => editor.decorations.size === 5);
        const marked = [...editor.decorations.entries()].filter(([, ranges]) => ranges.length > 0);
        // 60% in the strongest band, 3% in the faintest; the line beyond the document's end is left out
        assert.deepEqual(
            marked.map(([, ranges]) => ranges.map((r) => r.range.startLine)),
            [[4], [2]],
        );
        const strongest = marked[1][1][0].renderOptions as { after: { contentText: string } };
        assert.equal(strongest.after.contentText, "  60% of saxpy's energy (5 µJ)");
        const calls = received('workspace/executeCommand').filter((r) => r.params?.command === 'kerncast.lineCosts');
        assert.deepEqual(calls.at(-1)?.params?.arguments, ['file:///ws/a.cu']);

        await (world.vscode as { workspace: { getConfiguration(s: string): { update(k: string, v: unknown): Promise<void> } } })
            .workspace.getConfiguration('kerncast')
            .update('lineCosts.enabled', false);
        await waitFor('the decorations cleared', () => [...editor.decorations.values()].every((r) => r.length === 0));
        world.visibleEditors.length = 0;
    });

    it('restarts the server on request', async () => {
        await run('kerncast.restartServer');
        await waitFor('a second initialize', () => received('initialized').length === 2);
        assert.ok(received('shutdown').length >= 1);
        assert.equal(world.statusItems[0].text, '$(pulse) Kerncast: H100');
    });

    it('says how to fix a server command that does not start', async () => {
        world.messages.length = 0;
        world.settings.set('kerncast.server.command', [path.join(os.tmpdir(), 'no-such-dir', 'kerncast'), 'lsp']);
        await run('kerncast.restartServer');
        await waitFor('an error message', () => world.messages.length > 0);
        assert.equal(world.messages.length, 1, JSON.stringify(world.messages));
        const [msg] = world.messages;
        assert.equal(msg.kind, 'error');
        assert.match(msg.text, /could not start/);
        assert.match(msg.text, /kerncast\.server\.command/);
        assert.ok(msg.items.includes('Open Settings'));
        assert.match(world.statusItems[0].text, /^\$\(error\) Kerncast: H100$/);
        assert.equal(world.statusItems[0].command, 'kerncast.restartServer');
    });

    it('says how to install the server when none is found', async () => {
        world.messages.length = 0;
        world.settings.set('kerncast.server.command', []);
        const savedPath = process.env.PATH;
        const emptyDir = fs.mkdtempSync(path.join(os.tmpdir(), 'kerncast-empty-path-'));
        process.env.PATH = emptyDir;
        try {
            await run('kerncast.restartServer');
        } finally {
            process.env.PATH = savedPath;
            fs.rmdirSync(emptyDir);
        }
        assert.equal(world.messages.length, 1, JSON.stringify(world.messages));
        assert.match(world.messages[0].text, /pip install 'kerncast\[cuda\]'/);
        assert.deepEqual(world.messages[0].items, ['Open Settings', 'Copy Install Command', 'Show Output']);
    });
});
