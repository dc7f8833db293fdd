/**
 * Which command starts the language server. Pure: no `vscode` import; the file system and the environment
 * come in as arguments so that the unit tests can describe any machine.
 *
 * Order:
 *   1. the `kerncast.server.command` setting (a string or an array; used as given, nothing appended);
 *   2. the `kerncast` script next to the interpreter selected in the Python extension, if that extension is
 *      installed and has one selected: `<python>/../kerncast lsp`;
 *   3. `kerncast lsp` with `kerncast` found on PATH.
 */

import * as path from 'path';

import { expandVariables, PathContext } from './config';

export type CommandSource = 'setting' | 'python' | 'path' | 'default';

export interface ServerCommand {
    command: string;
    args: string[];
    source: CommandSource;
    /** false when nothing was found and `command` is only the default `kerncast`. */
    found: boolean;
}

export interface ResolveInput {
    /** The value of `kerncast.server.command` (string, array, or empty/undefined for automatic). */
    setting: unknown;
    /** The executable of the Python interpreter selected in the Python extension, if any. */
    pythonPath?: string;
    /** `process.platform`. */
    platform: string;
    /** `process.env` (PATH, PATHEXT and `${env:...}` expansion). */
    env: Record<string, string | undefined>;
    /** Whether a regular file exists at this absolute path. */
    isFile: (file: string) => boolean;
    /** For variables in the setting. */
    pathContext?: PathContext;
}

export const SERVER_NAME = 'kerncast';
export const SERVER_ARGS: readonly string[] = ['lsp'];
export const INSTALL_HINT = "pip install 'kerncast[cuda]'";

/**
 * Splits a command line into words: whitespace separates words, single quotes keep everything literally,
 * double quotes keep whitespace and allow `\"` and `\\`, a backslash outside quotes escapes the next
 * whitespace or quote (other backslashes are kept, so Windows paths survive).
 */
export function splitCommandLine(line: string): string[] {
    const words: string[] = [];
    let current = '';
    let inWord = false;
    let quote: '"' | "'" | null = null;
    for (let i = 0; i < line.length; i++) {
        const c = line[i];
        if (quote === "'") {
            if (c === "'") {
                quote = null;
            } else {
                current += c;
            }
        } else if (quote === '"') {
            if (c === '"') {
                quote = null;
            } else if (c === '\\' && (line[i + 1] === '"' || line[i + 1] === '\\')) {
                current += line[++i];
            } else {
                current += c;
            }
        } else if (c === '"' || c === "'") {
            quote = c;
            inWord = true;
        } else if (/\s/.test(c)) {
            if (inWord) {
                words.push(current);
                current = '';
                inWord = false;
            }
        } else if (c === '\\' && i + 1 < line.length && /[\s"']/.test(line[i + 1])) {
            current += line[++i];
            inWord = true;
        } else {
            current += c;
            inWord = true;
        }
    }
    if (quote !== null) {
        throw new Error(`unterminated ${quote} quote in ${JSON.stringify(line)}`);
    }
    if (inWord) {
        words.push(current);
    }
    return words;
}

/**
 * The words of the `kerncast.server.command` setting, variables expanded; `undefined` when the setting is
 * empty (automatic). Throws on a value of the wrong type.
 */
export function settingWords(setting: unknown, ctx: PathContext = {}): string[] | undefined {
    let words: string[];
    if (setting === undefined || setting === null) {
        return undefined;
    } else if (typeof setting === 'string') {
        words = splitCommandLine(setting);
    } else if (Array.isArray(setting) && setting.every((w) => typeof w === 'string')) {
        words = setting;
    } else {
        throw new Error('kerncast.server.command must be a string or an array of strings');
    }
    words = words.map((w) => expandVariables(w, ctx));
    if (words.length === 0 || words[0].trim() === '') {
        return undefined;
    }
    return words;
}

function isWindows(platform: string): boolean {
    return platform === 'win32';
}

function pathKey(env: Record<string, string | undefined>): string | undefined {
    // On Windows the variable may be spelt Path.
    return Object.keys(env).find((k) => k.toUpperCase() === 'PATH');
}

/** Candidate file names of an executable: on Windows with each PATHEXT extension (and as is, last). */
function executableNames(name: string, platform: string, env: Record<string, string | undefined>): string[] {
    if (!isWindows(platform)) {
        return [name];
    }
    const extKey = Object.keys(env).find((k) => k.toUpperCase() === 'PATHEXT');
    const exts = (extKey ? env[extKey] : undefined) ?? '.COM;.EXE;.BAT;.CMD';
    const names = exts
        .split(';')
        .filter((e) => e !== '')
        .map((e) => name + e.toLowerCase());
    return [...names, name];
}

function pathFlavour(platform: string): path.PlatformPath {
    return isWindows(platform) ? path.win32 : path.posix;
}

/** The first file named `name` (with PATHEXT on Windows) in the directories of PATH. */
export function findOnPath(
    name: string,
    platform: string,
    env: Record<string, string | undefined>,
    isFile: (file: string) => boolean,
): string | undefined {
    const key = pathKey(env);
    const dirs = (key ? env[key] : undefined) ?? '';
    const p = pathFlavour(platform);
    const sep = isWindows(platform) ? ';' : ':';
    for (const rawDir of dirs.split(sep)) {
        const dir = rawDir.replace(/^"(.*)"$/, '$1');
        if (dir === '') {
            continue;
        }
        for (const candidate of executableNames(name, platform, env)) {
            const file = p.join(dir, candidate);
            if (isFile(file)) {
                return file;
            }
        }
    }
    return undefined;
}

/**
 * The `kerncast` script of a Python environment, given its interpreter: next to the interpreter
 * (`bin/kerncast` of a venv, `Scripts\kerncast.exe` of a Windows venv), or in `Scripts\` beside a Windows
 * base interpreter (conda, python.org installs).
 */
export function scriptNextToInterpreter(
    pythonPath: string,
    platform: string,
    isFile: (file: string) => boolean,
): string | undefined {
    const p = pathFlavour(platform);
    const dir = p.dirname(pythonPath);
    const dirs = isWindows(platform) ? [dir, p.join(dir, 'Scripts')] : [dir];
    const names = isWindows(platform) ? ['kerncast.exe', 'kerncast.cmd', 'kerncast.bat'] : ['kerncast'];
    for (const d of dirs) {
        for (const n of names) {
            const file = p.join(d, n);
            if (isFile(file)) {
                return file;
            }
        }
    }
    return undefined;
}

/** Resolves the server command in the order of the module comment. */
export function resolveServerCommand(input: ResolveInput): ServerCommand {
    const ctx: PathContext = { ...input.pathContext, env: input.pathContext?.env ?? input.env };
    const words = settingWords(input.setting, ctx);
    if (words !== undefined) {
        return { command: words[0], args: words.slice(1), source: 'setting', found: true };
    }
    if (input.pythonPath) {
        const script = scriptNextToInterpreter(input.pythonPath, input.platform, input.isFile);
        if (script) {
            return { command: script, args: [...SERVER_ARGS], source: 'python', found: true };
        }
    }
    const onPath = findOnPath(SERVER_NAME, input.platform, input.env, input.isFile);
    if (onPath) {
        return { command: onPath, args: [...SERVER_ARGS], source: 'path', found: true };
    }
    return { command: SERVER_NAME, args: [...SERVER_ARGS], source: 'default', found: false };
}

/** The command as one line, for messages and the output channel. */
export function formatCommand(cmd: { command: string; args: readonly string[] }): string {
    const quote = (w: string): string => (w === '' || /[\s"'\\]/.test(w) ? JSON.stringify(w) : w);
    return [cmd.command, ...cmd.args].map(quote).join(' ');
}

/** Where the command came from, for messages. */
export function describeSource(cmd: ServerCommand, pythonPath?: string): string {
    switch (cmd.source) {
        case 'setting':
            return 'from the kerncast.server.command setting';
        case 'python':
            return `from the selected Python environment (${pythonPath ?? 'interpreter'})`;
        case 'path':
            return 'found on PATH';
        default:
            return 'not found in the selected Python environment or on PATH';
    }
}

/** The message shown when the server cannot start, with the fix. */
export function startFailureMessage(cmd: ServerCommand, reason: string, pythonPath?: string): string {
    const fix =
        cmd.source === 'setting'
            ? 'Check the kerncast.server.command setting'
            : `Install the server with \`${INSTALL_HINT}\`${
                  pythonPath ? ' in the selected Python environment' : ''
              } or set kerncast.server.command`;
    return `Kerncast: the language server could not start (${formatCommand(cmd)}, ${describeSource(
        cmd,
        pythonPath,
    )}): ${reason}. ${fix}.`;
}

/** Removes the commands the extension implements itself from a server's `executeCommandProvider` list. */
export function withoutClientCommands(commands: readonly string[], clientOwned: ReadonlySet<string>): string[] {
    return commands.filter((c) => !clientOwned.has(c));
}
