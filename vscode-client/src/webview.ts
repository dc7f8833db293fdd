/**
 * The report page (the server's `kerncast.reportPage`, the page `kerncast report --html` writes) in a webview,
 * and the messages that webview may send. Pure: no `vscode` import.
 *
 * The page shows text from the analysed code (kernel names, comments, file names), which the server escapes.
 * The webview adds a second wall: its Content-Security-Policy loads nothing remote, no file, no frame, no form,
 * and runs only the one script this module adds, by a fresh nonce; the page's own policy (which allows no
 * script at all) is replaced by it, as two policies would both apply. The script only reports a click on a
 * per-line row (`data-line`) as `{type: 'reveal', line}`; the extension acts on nothing else, and a reveal
 * only moves the cursor in the document the report was made for.
 */

import { randomBytes } from 'crypto';

/** What the webview may ask of the extension: show a line (0-based) of the report's own document. */
export interface RevealMessage {
    type: 'reveal';
    line: number;
}

/** A nonce for one page: 128 random bits, base64 (the characters a CSP nonce allows). */
export function makeNonce(): string {
    return randomBytes(16).toString('base64');
}

/** The webview's policy: styles inline or from the webview itself, images inline, scripts only by `nonce`. */
export function webviewCsp(nonce: string, cspSource: string): string {
    return [
        "default-src 'none'",
        `style-src 'unsafe-inline' ${cspSource}`,
        'img-src data:',
        `script-src 'nonce-${nonce}'`,
        "form-action 'none'",
        "base-uri 'none'",
        "frame-src 'none'",
        "connect-src 'none'",
    ].join('; ');
}

/**
 * The script of the page: a click on a row with `data-line` (1-based, digits only) posts that line, 0-based.
 * It reads only the attribute, never the row's text.
 */
export function revealScript(): string {
    return (
        '(function () {' +
        'const vscode = acquireVsCodeApi();' +
        "document.addEventListener('click', function (event) {" +
        "const row = event.target instanceof Element ? event.target.closest('tr[data-line]') : null;" +
        'if (!row) { return; }' +
        "const text = row.getAttribute('data-line') || '';" +
        'if (!/^[0-9]{1,7}$/.test(text)) { return; }' +
        "vscode.postMessage({ type: 'reveal', line: Number(text) - 1 });" +
        '});' +
        '})();'
    );
}

const POLICY = /<meta http-equiv="Content-Security-Policy" content="[^"]*">/;
const CSS_OF_ROWS = '<style>tr[data-line] { cursor: pointer; } tr[data-line]:hover { outline: 1px solid #888; }</style>';

/**
 * The webview's HTML from the server's page: its policy replaced by the webview's, the reveal script added by
 * nonce. `undefined` when the page is not one the server makes (no policy in its head, or a script already in
 * it), so that nothing unexpected is ever shown with scripts enabled.
 */
export function webviewHtml(page: unknown, nonce: string, cspSource: string): string | undefined {
    if (typeof page !== 'string' || !/^[A-Za-z0-9+/=]{16,}$/.test(nonce)) {
        return undefined;
    }
    const headEnd = page.indexOf('</head>');
    const bodyEnd = page.lastIndexOf('</body>');
    const policy = POLICY.exec(page);
    if (headEnd < 0 || bodyEnd < headEnd || !policy || policy.index > headEnd || /<script/i.test(page)) {
        return undefined;
    }
    const ours = `<meta http-equiv="Content-Security-Policy" content="${webviewCsp(nonce, cspSource)}">`;
    const withPolicy = page.slice(0, policy.index) + ours + page.slice(policy.index + policy[0].length);
    const end = withPolicy.lastIndexOf('</body>');
    const headAt = withPolicy.indexOf('</head>');
    return (
        withPolicy.slice(0, headAt) +
        CSS_OF_ROWS +
        withPolicy.slice(headAt, end) +
        `<script nonce="${nonce}">${revealScript()}</script>` +
        withPolicy.slice(end)
    );
}

/**
 * The one message the extension acts on, checked: `{type: 'reveal', line}` with `line` an integer inside the
 * document (`lineCount` lines). Anything else (another type, a command, a path or URI, a line out of range or
 * not an integer) is `undefined`: ignored. Extra fields are dropped, never read.
 */
export function parseWebviewMessage(message: unknown, lineCount: number): RevealMessage | undefined {
    if (typeof message !== 'object' || message === null || Array.isArray(message)) {
        return undefined;
    }
    const m = message as Record<string, unknown>;
    if (m.type !== 'reveal' || typeof m.line !== 'number' || !Number.isInteger(m.line)) {
        return undefined;
    }
    if (m.line < 0 || m.line >= lineCount) {
        return undefined;
    }
    return { type: 'reveal', line: m.line };
}
