/**
 * Just enough of the `vscode` API to run the extension and its language client under plain node: commands,
 * configuration (with change events), messages, the status bar, output channels and text document content
 * providers are real; everything else is an inert stub that accepts any call.
 */
import * as Module from 'node:module';

type Listener<T> = (e: T) => unknown;

class Disposable {
    constructor(private readonly onDispose?: () => void) {}
    static from(...items: { dispose(): unknown }[]): Disposable {
        return new Disposable(() => items.forEach((d) => d.dispose()));
    }
    dispose(): void {
        this.onDispose?.();
    }
}

class EventEmitter<T> {
    private listeners: Listener<T>[] = [];
    readonly event = (listener: Listener<T>): Disposable => {
        this.listeners.push(listener);
        return new Disposable(() => {
            this.listeners = this.listeners.filter((l) => l !== listener);
        });
    };
    fire(e: T): void {
        for (const l of [...this.listeners]) {
            l(e);
        }
    }
    dispose(): void {
        this.listeners = [];
    }
}

class Uri {
    private constructor(
        readonly scheme: string,
        readonly authority: string,
        readonly path: string,
        readonly query: string,
        readonly fragment: string,
    ) {}
    static parse(value: string): Uri {
        const m = /^([a-zA-Z][\w+.-]*):(?:\/\/([^/?#]*))?([^?#]*)(?:\?([^#]*))?(?:#(.*))?$/.exec(value);
        if (!m) {
            throw new Error(`not a URI: ${value}`);
        }
        return new Uri(m[1], m[2] ?? '', decodeURIComponent(m[3]), m[4] ?? '', m[5] ?? '');
    }
    static file(fsPath: string): Uri {
        return new Uri('file', '', fsPath, '', '');
    }
    static from(c: { scheme: string; authority?: string; path?: string; query?: string; fragment?: string }): Uri {
        return new Uri(c.scheme, c.authority ?? '', c.path ?? '', c.query ?? '', c.fragment ?? '');
    }
    get fsPath(): string {
        return this.path;
    }
    with(c: Partial<{ scheme: string; path: string; query: string }>): Uri {
        return new Uri(c.scheme ?? this.scheme, this.authority, c.path ?? this.path, c.query ?? this.query, this.fragment);
    }
    toString(): string {
        const auth = this.scheme === 'file' || this.authority ? `//${this.authority}` : '';
        const path = this.path.split('/').map(encodeURIComponent).join('/');
        return `${this.scheme}:${auth}${path}${this.query ? `?${this.query}` : ''}${this.fragment ? `#${this.fragment}` : ''}`;
    }
    toJSON(): unknown {
        return { scheme: this.scheme, path: this.path };
    }
}

class ThemeColor {
    constructor(readonly id: string) {}
}

class Range {
    constructor(
        readonly startLine: number,
        readonly startCharacter: number,
        readonly endLine: number,
        readonly endCharacter: number,
    ) {}
}

/** A webview panel that keeps its HTML and options and lets a test post messages as its page would. */
export interface FakePanel {
    viewType: string;
    title: string;
    options: Record<string, unknown>;
    html: string;
    disposed: boolean;
    /** Delivers a message as if the page had posted it; resolves once the extension's handler is done. */
    post(message: unknown): Promise<void>;
}

/** An editor whose decorations are recorded per decoration type (in creation order). */
export interface FakeEditor {
    document: { uri: Uri; languageId: string; fileName: string; lineCount: number };
    decorations: Map<number, { range: Range; renderOptions?: unknown }[]>;
}

/** A stub that is callable, constructible and has every property, each again such a stub. */
function stub(): unknown {
    const target = function () {
        /* inert */
    };
    const proxy: unknown = new Proxy(target, {
        get(_t, prop) {
            if (prop === 'then') {
                return undefined;
            }
            if (prop === Symbol.toPrimitive) {
                return () => 0;
            }
            if (prop === Symbol.iterator) {
                return function* () {
                    /* empty */
                };
            }
            if (prop === 'prototype') {
                return Object.prototype;
            }
            return proxy;
        },
        apply() {
            return proxy;
        },
        construct() {
            return {};
        },
    });
    return proxy;
}

function deepStub<T extends object>(real: T): T {
    return new Proxy(real, {
        get(t, prop, receiver) {
            if (prop in t) {
                return Reflect.get(t, prop, receiver) as unknown;
            }
            if (prop === 'then') {
                return undefined;
            }
            return stub();
        },
    });
}

export interface Message {
    kind: 'error' | 'warning' | 'info';
    text: string;
    items: string[];
}

export interface FakeStatusBarItem {
    text: string;
    tooltip: string;
    command: string;
    visible: boolean;
}

export interface FakeWorld {
    vscode: unknown;
    settings: Map<string, unknown>;
    commands: Map<string, (...args: unknown[]) => unknown>;
    messages: Message[];
    output: string[];
    statusItems: FakeStatusBarItem[];
    executed: { command: string; args: unknown[] }[];
    /** What the next showQuickPick resolves to: picks an item by a predicate. */
    quickPick: (items: readonly { label: string }[]) => unknown;
    providers: Map<string, { provideTextDocumentContent(uri: Uri): string }>;
    activeEditor: unknown;
    setActiveEditor(uri: string, languageId: string, line: number, character: number): void;
    panels: FakePanel[];
    /** Documents shown by `window.showTextDocument`, with the options they were shown with. */
    shown: { uri: string; options: unknown }[];
    /** Files opened by `workspace.openTextDocument` (file URIs only). */
    opened: string[];
    visibleEditors: FakeEditor[];
    /** Adds a visible editor of a file with `lineCount` lines. */
    addVisibleEditor(uri: string, lineCount: number): FakeEditor;
    fireDiagnostics(uris: string[]): void;
}

/** Builds the fake and makes `require('vscode')` return it; returns a function that undoes that. */
export function installFakeVscode(initial: Record<string, unknown>): { world: FakeWorld; uninstall: () => void } {
    const settings = new Map<string, unknown>(Object.entries(initial));
    const commands = new Map<string, (...args: unknown[]) => unknown>();
    const configChanged = new EventEmitter<{ affectsConfiguration(section: string): boolean }>();
    const diagnosticsChanged = new EventEmitter<{ uris: Uri[] }>();
    let decorationTypes = 0;

    const world: FakeWorld = {
        vscode: undefined,
        settings,
        commands,
        messages: [],
        output: [],
        statusItems: [],
        executed: [],
        quickPick: () => undefined,
        providers: new Map(),
        activeEditor: undefined,
        panels: [],
        shown: [],
        opened: [],
        visibleEditors: [],
        addVisibleEditor(uri, lineCount) {
            const parsed = Uri.parse(uri);
            const editor: FakeEditor & { setDecorations(type: { id: number }, ranges: never[]): void } = {
                document: { uri: parsed, languageId: 'cuda-cpp', fileName: parsed.fsPath, lineCount },
                decorations: new Map(),
                setDecorations(type, ranges) {
                    editor.decorations.set(type.id, ranges);
                },
            };
            world.visibleEditors.push(editor);
            return editor;
        },
        fireDiagnostics(uris) {
            diagnosticsChanged.fire({ uris: uris.map((u) => Uri.parse(u)) });
        },
        setActiveEditor(uri, languageId, line, character) {
            const parsed = Uri.parse(uri);
            world.activeEditor = {
                document: { uri: parsed, languageId, fileName: parsed.fsPath },
                selection: { active: { line, character } },
            };
        },
    };

    const configuration = (section?: string) => {
        const prefix = section ? `${section}.` : '';
        return {
            get<T>(key: string, fallback?: T): T | undefined {
                const full = prefix + key;
                if (settings.has(full)) {
                    return settings.get(full) as T;
                }
                // A nested read (e.g. `thresholds`) gathers the dotted settings under it.
                const nested: Record<string, unknown> = {};
                let found = false;
                for (const [k, v] of settings) {
                    if (k.startsWith(`${full}.`)) {
                        nested[k.slice(full.length + 1)] = v;
                        found = true;
                    }
                }
                return found ? (nested as T) : fallback;
            },
            has(key: string): boolean {
                return settings.has(prefix + key);
            },
            inspect(key: string) {
                return { key: prefix + key, globalValue: settings.get(prefix + key) };
            },
            update(key: string, value: unknown): Promise<void> {
                const full = prefix + key;
                settings.set(full, value);
                configChanged.fire({
                    affectsConfiguration: (s: string) => full === s || full.startsWith(`${s}.`) || s.startsWith(`${full}.`),
                });
                return Promise.resolve();
            },
        };
    };

    const outputChannel = (name: string) => {
        const line = (level: string) => (msg: string) => world.output.push(`[${name}] ${level} ${msg}`);
        return deepStub({
            name,
            append: line(''),
            appendLine: line(''),
            trace: line('trace'),
            debug: line('debug'),
            info: line('info'),
            warn: line('warn'),
            error: line('error'),
            show: () => undefined,
            dispose: () => undefined,
            logLevel: 2,
            onDidChangeLogLevel: new EventEmitter<number>().event,
        });
    };

    const message = (kind: Message['kind']) => (text: string, ...items: unknown[]) => {
        world.messages.push({ kind, text, items: items.filter((i): i is string => typeof i === 'string') });
        return Promise.resolve(undefined);
    };

    const api = {
        version: '1.82.0',
        Disposable,
        EventEmitter,
        Uri,
        ThemeColor,
        Range,
        StatusBarAlignment: { Left: 1, Right: 2 },
        ConfigurationTarget: { Global: 1, Workspace: 2, WorkspaceFolder: 3 },
        ProgressLocation: { SourceControl: 1, Window: 10, Notification: 15 },
        ViewColumn: { Active: -1, Beside: -2, One: 1 },
        env: deepStub({ language: 'en', appName: 'Fake Code', clipboard: { writeText: () => Promise.resolve() } }),
        extensions: deepStub({ getExtension: () => undefined }),
        commands: deepStub({
            registerCommand(id: string, fn: (...args: unknown[]) => unknown) {
                if (commands.has(id)) {
                    throw new Error(`command '${id}' already exists`);
                }
                commands.set(id, fn);
                return new Disposable(() => commands.delete(id));
            },
            executeCommand(id: string, ...args: unknown[]) {
                world.executed.push({ command: id, args });
                const fn = commands.get(id);
                if (fn) {
                    return Promise.resolve(fn(...args));
                }
                if (id === 'markdown.showPreviewToSide' || id === 'workbench.action.openSettings') {
                    return Promise.resolve(undefined);
                }
                return Promise.reject(new Error(`command '${id}' not found`));
            },
        }),
        window: deepStub({
            get activeTextEditor() {
                return world.activeEditor;
            },
            get visibleTextEditors() {
                return world.visibleEditors;
            },
            onDidChangeActiveTextEditor: new EventEmitter<unknown>().event,
            createTextEditorDecorationType() {
                const id = decorationTypes++;
                return { id, dispose: () => undefined };
            },
            createWebviewPanel(viewType: string, title: string, _column: unknown, options: Record<string, unknown>) {
                const received = new EventEmitter<unknown>();
                const disposed = new EventEmitter<void>();
                let handled: Promise<unknown> = Promise.resolve();
                const record: FakePanel = {
                    viewType,
                    title,
                    options,
                    html: '',
                    disposed: false,
                    async post(message: unknown) {
                        received.fire(message); // the extension's listener sets `handled` while it runs
                        await handled;
                    },
                };
                world.panels.push(record);
                const webview = {
                    cspSource: 'vscode-webview://fake',
                    get html() {
                        return record.html;
                    },
                    set html(v: string) {
                        record.html = v;
                    },
                    onDidReceiveMessage(listener: (message: unknown) => unknown) {
                        return received.event((message) => {
                            handled = Promise.resolve(listener(message));
                        });
                    },
                    postMessage: () => Promise.resolve(true),
                };
                return {
                    webview,
                    get title() {
                        return record.title;
                    },
                    set title(v: string) {
                        record.title = v;
                    },
                    reveal: () => undefined,
                    onDidDispose: disposed.event,
                    dispose() {
                        if (!record.disposed) {
                            record.disposed = true;
                            disposed.fire();
                        }
                    },
                };
            },
            createOutputChannel: outputChannel,
            createStatusBarItem() {
                const item = { text: '', tooltip: '', command: '', visible: false, name: '', backgroundColor: undefined };
                world.statusItems.push(item);
                return deepStub({
                    get text() {
                        return item.text;
                    },
                    set text(v: string) {
                        item.text = v;
                    },
                    set tooltip(v: string) {
                        item.tooltip = v;
                    },
                    set command(v: string) {
                        item.command = v;
                    },
                    set name(v: string) {
                        item.name = v;
                    },
                    set backgroundColor(_v: unknown) {
                        /* ignored */
                    },
                    show: () => {
                        item.visible = true;
                    },
                    hide: () => {
                        item.visible = false;
                    },
                    dispose: () => undefined,
                });
            },
            showErrorMessage: message('error'),
            showWarningMessage: message('warning'),
            showInformationMessage: message('info'),
            showQuickPick: (items: readonly { label: string }[]) => Promise.resolve(world.quickPick(items)),
            withProgress: (_opts: unknown, task: () => Promise<unknown>) => task(),
            showTextDocument(document: { uri: Uri }, options: unknown) {
                world.shown.push({ uri: document.uri.toString(), options });
                return Promise.resolve(undefined);
            },
        }),
        workspace: deepStub({
            workspaceFolders: undefined,
            textDocuments: [],
            notebookDocuments: [],
            getConfiguration: configuration,
            onDidChangeConfiguration: configChanged.event,
            registerTextDocumentContentProvider(scheme: string, provider: { provideTextDocumentContent(uri: Uri): string }) {
                world.providers.set(scheme, provider);
                return new Disposable(() => world.providers.delete(scheme));
            },
            getWorkspaceFolder(uri: Uri) {
                return uri.scheme === 'file' && uri.path.startsWith('/ws/') ? { uri: Uri.file('/ws'), name: 'ws', index: 0 } : undefined;
            },
            openTextDocument(uri: Uri) {
                if (uri.scheme === 'file') {
                    world.opened.push(uri.toString());
                    return Promise.resolve({ uri, lineCount: 50, languageId: 'cuda-cpp', fileName: uri.fsPath });
                }
                const provider = world.providers.get(uri.scheme);
                return Promise.resolve({ uri, getText: () => provider?.provideTextDocumentContent(uri) ?? '' });
            },
        }),
        languages: deepStub({ match: () => 0, onDidChangeDiagnostics: diagnosticsChanged.event }),
    };
    const vscode = deepStub(api);
    world.vscode = vscode;

    const mod = Module as unknown as { _load: (request: string, ...rest: unknown[]) => unknown };
    const originalLoad = mod._load;
    mod._load = function (request: string, ...rest: unknown[]) {
        if (request === 'vscode') {
            return vscode;
        }
        return originalLoad.call(this, request, ...rest);
    };
    return {
        world,
        uninstall: () => {
            mod._load = originalLoad;
        },
    };
}
