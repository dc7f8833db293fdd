import * as assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { makeNonce, parseWebviewMessage, revealScript, webviewCsp, webviewHtml } from '../webview';

const PAGE =
    '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">' +
    '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; script-src \'none\'">' +
    '<title>Kerncast report: a.cu</title><style>body{}</style></head><body>' +
    '<table class="lines"><tr data-line="12"><td>12</td><td>&lt;script&gt;x()&lt;/script&gt;</td></tr></table>' +
    '</body></html>\n';
const NONCE = 'abcdefghijklmnopqrstuv==';

describe('webviewHtml', () => {
    it('replaces the page policy by one that allows only its own script, by nonce', () => {
        const html = webviewHtml(PAGE, NONCE, 'vscode-resource:');
        assert.ok(html);
        const policies = [...html.matchAll(/http-equiv="Content-Security-Policy" content="([^"]*)"/g)].map((m) => m[1]);
        assert.deepEqual(policies, [webviewCsp(NONCE, 'vscode-resource:')]);
        const policy = policies[0];
        assert.match(policy, /default-src 'none'/);
        assert.match(policy, new RegExp(`script-src 'nonce-${NONCE.replace(/[+/=]/g, '\\$&')}'`));
        assert.doesNotMatch(policy, /unsafe-eval|https?:|\*/);
        assert.doesNotMatch(policy, /script-src[^;]*unsafe-inline/);
        const scripts = [...html.matchAll(/<script([^>]*)>/g)].map((m) => m[1]);
        assert.deepEqual(scripts, [` nonce="${NONCE}"`]);
        assert.ok(html.includes('&lt;script&gt;x()&lt;/script&gt;'), 'the analysed text stays escaped');
        assert.ok(html.indexOf('<script') > html.indexOf('</table>') && html.trimEnd().endsWith('</html>'));
    });

    it('refuses anything that is not a page of the server', () => {
        assert.equal(webviewHtml(undefined, NONCE, 'x'), undefined);
        assert.equal(webviewHtml('<html><body>no policy</body></html>', NONCE, 'x'), undefined);
        assert.equal(webviewHtml(PAGE.replace('</table>', '</table><script>alert(1)</script>'), NONCE, 'x'), undefined);
        assert.equal(webviewHtml(PAGE.replace('</table>', '</table><SCRIPT src=x></SCRIPT>'), NONCE, 'x'), undefined);
        assert.equal(webviewHtml(PAGE, 'bad nonce"><script>', 'x'), undefined);
    });

    it('makes a fresh nonce each time', () => {
        const a = makeNonce();
        assert.match(a, /^[A-Za-z0-9+/=]{24}$/);
        assert.notEqual(a, makeNonce());
    });

    it('has a script that posts only a line read from data-line', () => {
        const script = revealScript();
        assert.match(script, /postMessage\(\{ type: 'reveal', line: Number\(text\) - 1 \}\)/);
        assert.doesNotMatch(script, /innerHTML|eval|Function\(|textContent|href/);
    });
});

describe('parseWebviewMessage', () => {
    it('accepts a line to show inside the document', () => {
        assert.deepEqual(parseWebviewMessage({ type: 'reveal', line: 11 }, 40), { type: 'reveal', line: 11 });
        assert.deepEqual(parseWebviewMessage({ type: 'reveal', line: 0, uri: 'file:///etc/passwd' }, 1), {
            type: 'reveal',
            line: 0,
        });
    });

    it('ignores commands, files, URIs and lines that are not in the document', () => {
        const refused: unknown[] = [
            { type: 'command', command: 'workbench.action.terminal.new' },
            { type: 'executeCommand', command: 'kerncast.selectGpu', args: ['h100'] },
            { type: 'open', path: '/etc/passwd' },
            { type: 'openFile', uri: 'file:///home/u/.ssh/id_rsa' },
            { type: 'reveal', line: '3' },
            { type: 'reveal', line: 3.5 },
            { type: 'reveal', line: -1 },
            { type: 'reveal', line: 40 },
            { type: 'reveal', line: Number.NaN },
            { type: 'reveal' },
            ['reveal', 3],
            'reveal',
            null,
            undefined,
        ];
        for (const message of refused) {
            assert.equal(parseWebviewMessage(message, 40), undefined, JSON.stringify(message));
        }
    });
});
