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
}

/** Builds the fake and makes `require('vscode')` return it; returns a function that undoes that. */
export function installFakeVscode(initial: Record<string, unknown>): { world: FakeWorld; uninstall: () => void } {
    const settings = new Map<string, unknown>(Object.entries(initial));
    const commands = new Map<string, (...args: unknown[]) => unknown>();
    const configChanged = new EventEmitter<{ affectsConfiguration(section: string): boolean }>();

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
            visibleTextEditors: [],
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
            showTextDocument: () => Promise.resolve(undefined),
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
            openTextDocument(uri: Uri) {
                const provider = world.providers.get(uri.scheme);
                return Promise.resolve({ uri, getText: () => provider?.provideTextDocumentContent(uri) ?? '' });
            },
        }),
        languages: deepStub({ match: () => 0 }),
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
