/**
 * Arguments and result of the server command `kerncast.showReport`. Pure: no `vscode` import.
 *
 * The command is reached two ways: from a code lens of the server, with `[uri, kernelName]`, and from the
 * command palette or the editor context menu, with no arguments (or the editor's URI), in which case the
 * kernel under the cursor is asked for with `[uri, {line, character}]`.
 */

export interface LspPosition {
    line: number;
    character: number;
}

/** The active editor, reduced to what the command needs. */
export interface ActiveEditorInfo {
    uri: string;
    position: LspPosition;
}

export type ReportTarget = string | LspPosition;
export type ReportArguments = [string, ReportTarget];

function isPosition(value: unknown): value is LspPosition {
    if (typeof value !== 'object' || value === null) {
        return false;
    }
    const v = value as Record<string, unknown>;
    return (
        typeof v.line === 'number' &&
        typeof v.character === 'number' &&
        Number.isInteger(v.line) &&
        Number.isInteger(v.character) &&
        v.line >= 0 &&
        v.character >= 0
    );
}

/** A URI argument as a string: a string as is, a `vscode.Uri` (anything with a scheme) via `toString()`. */
export function uriString(value: unknown): string | undefined {
    if (typeof value === 'string' && value !== '') {
        return value;
    }
    if (typeof value === 'object' && value !== null && typeof (value as { scheme?: unknown }).scheme === 'string') {
        const toString = (value as { toString?: unknown }).toString;
        if (typeof toString === 'function' && toString !== Object.prototype.toString) {
            const s: unknown = toString.call(value);
            return typeof s === 'string' && s !== '' ? s : undefined;
        }
    }
    return undefined;
}

/**
 * The arguments to send to the server, or `undefined` when there is nothing to ask about (no kernel name
 * and no active editor on the same document).
 */
export function reportArguments(args: readonly unknown[], active: ActiveEditorInfo | undefined): ReportArguments | undefined {
    const uri = uriString(args[0]);
    const target = args[1];
    if (uri !== undefined && typeof target === 'string' && target !== '') {
        return [uri, target];
    }
    if (uri !== undefined && isPosition(target)) {
        return [uri, { line: target.line, character: target.character }];
    }
    if (active === undefined) {
        return undefined;
    }
    if (uri !== undefined && uri !== active.uri) {
        // Invoked on another document (e.g. from the explorer) with no kernel: nothing under a cursor there.
        return undefined;
    }
    return [active.uri, { line: active.position.line, character: active.position.character }];
}

/** The markdown of the server's answer `{markdown}`; `undefined` when there is none (no kernel there). */
export function reportMarkdown(result: unknown): string | undefined {
    if (typeof result === 'string') {
        return result.trim() === '' ? undefined : result;
    }
    if (typeof result !== 'object' || result === null) {
        return undefined;
    }
    const md = (result as { markdown?: unknown }).markdown;
    return typeof md === 'string' && md.trim() !== '' ? md : undefined;
}

/** The kernel's name: the argument if given, otherwise the first markdown heading's backquoted or last word. */
export function reportKernelName(target: ReportTarget, markdown: string): string {
    if (typeof target === 'string') {
        return target;
    }
    const heading = /^#{1,6}\s+(.+)$/m.exec(markdown);
    if (heading) {
        const code = /`([^`]+)`/.exec(heading[1]);
        const text = (code ? code[1] : heading[1]).trim();
        if (text !== '') {
            return text;
        }
    }
    return 'kernel';
}

/** A file-name-safe form of a name. */
function safe(name: string): string {
    const s = name.replace(/[^A-Za-z0-9_.-]+/g, '_');
    return s === '' ? 'report' : s.slice(0, 120);
}

/**
 * The path of the virtual report document: one per source file and kernel, so that asking again refreshes
 * the same tab. Ends in `.md` so that VS Code treats it as markdown.
 */
export function reportDocumentPath(sourceUri: string, kernel: string): string {
    const withoutQuery = sourceUri.replace(/[?#].*$/, '');
    let base = withoutQuery.slice(withoutQuery.lastIndexOf('/') + 1);
    try {
        base = decodeURIComponent(base);
    } catch {
        // keep the raw name
    }
    return `/${safe(base)}/${safe(kernel)}.md`;
}
