/**
 * The VS Code side of Kerncast: starts `kerncast lsp` over stdio, passes the settings to it, and adds the GPU
 * picker, the kernel report and the status bar item. Everything that can be decided without VS Code lives in
 * the pure modules (config, serverCommand, gpus, report) and is unit-tested there.
 */

import * as fs from 'fs';
import * as os from 'os';

import * as vscode from 'vscode';
import {
    CancellationTokenSource,
    CloseAction,
    DidChangeConfigurationNotification,
    ErrorAction,
    ExecuteCommandRequest,
    LanguageClient,
    LanguageClientOptions,
    RegistrationParams,
    ServerCapabilities,
    ServerOptions,
    State,
    StaticFeature,
    TransportKind,
} from 'vscode-languageclient/node';

import {
    buildInitializationOptions,
    didChangeConfigurationParams,
    KerncastOptions,
    PathContext,
    readerFromObject,
    SERVER_SETTING_KEYS,
} from './config';
import { gpuLabel, gpuPickItems, GpuInfo, KNOWN_GPU_IDS, parseGpuList, statusBarText } from './gpus';
import { afterText, BANDS, bandColor, byBand, parseLineCosts } from './lineCosts';
import { reportArguments, reportDocumentPath, reportKernelName, reportMarkdown, uriString } from './report';
import {
    formatCommand,
    describeSource,
    INSTALL_HINT,
    resolveServerCommand,
    ServerCommand,
    settingWords,
    startFailureMessage,
    withoutClientCommands,
} from './serverCommand';
import { makeNonce, parseWebviewMessage, webviewHtml } from './webview';

const SECTION = 'kerncast';
const CMD_SELECT_GPU = 'kerncast.selectGpu';
const CMD_SHOW_REPORT = 'kerncast.showReport';
const CMD_RESTART = 'kerncast.restartServer';
const CMD_SHOW_REPORT_PAGE = 'kerncast.showReportPage';
const SERVER_CMD_REPORT_PAGE = 'kerncast.reportPage';
const SERVER_CMD_LINE_COSTS = 'kerncast.lineCosts';
const REPORT_VIEW_TYPE = 'kerncast.reportPage';
const SERVER_CMD_LIST_GPUS = 'kerncast.listGpus';
const SERVER_CMD_SHOW_REPORT = 'kerncast.showReport';
const REPORT_SCHEME = 'kerncast-report';
const LANGUAGES = ['cuda-cpp', 'cuda', 'ptx'];
const EXTENSIONS = /\.(cu|cuh|ptx)$/i;
const PYTHON_EXTENSION_ID = 'ms-python.python';
const PYTHON_API_TIMEOUT_MS = 10000;
const STOP_TIMEOUT_MS = 5000;

/** Commands the extension implements; the server may advertise the same ids (code lenses use them). */
const CLIENT_COMMANDS: ReadonlySet<string> = new Set([CMD_SELECT_GPU, CMD_SHOW_REPORT, CMD_RESTART, CMD_SHOW_REPORT_PAGE]);

/** The GPU id a command was given: `"h100"` or `{ id: "h100" }` as the first argument; undefined without one. */
function gpuIdArgument(args: unknown[]): string | undefined {
    const first = args[0];
    const id = typeof first === 'object' && first !== null ? (first as { id?: unknown }).id : first;
    return typeof id === 'string' && id.trim() !== '' ? id.trim() : undefined;
}

// ---------------------------------------------------------------------------------------------------------
// Settings

function workspacePathContext(): PathContext {
    const folder = vscode.workspace.workspaceFolders?.find((f) => f.uri.scheme === 'file');
    return { workspaceFolder: folder?.uri.fsPath, home: os.homedir(), env: process.env };
}

function currentOptions(log?: vscode.LogOutputChannel): KerncastOptions {
    const config = vscode.workspace.getConfiguration(SECTION);
    const { options, problems } = buildInitializationOptions((key) => config.get(key), workspacePathContext());
    for (const problem of problems) {
        log?.warn(problem);
    }
    return options;
}

function currentGpu(): string {
    return vscode.workspace.getConfiguration(SECTION).get<string>('gpu') || 'v100';
}

// ---------------------------------------------------------------------------------------------------------
// The Python extension, optionally

interface PythonEnvironmentPath {
    id: string;
    path: string;
}

interface PythonApi {
    environments?: {
        getActiveEnvironmentPath(resource?: vscode.Uri): PythonEnvironmentPath;
        resolveEnvironment(
            env: PythonEnvironmentPath | string,
        ): Promise<{ executable: { uri?: vscode.Uri } } | undefined>;
        onDidChangeActiveEnvironmentPath: vscode.Event<unknown>;
    };
    settings?: {
        getExecutionDetails(resource?: vscode.Uri): { execCommand: string[] | undefined };
    };
}

function withTimeout<T>(promise: Thenable<T>, ms: number): Promise<T | undefined> {
    return new Promise((resolve) => {
        const timer = setTimeout(() => resolve(undefined), ms);
        promise.then(
            (value) => {
                clearTimeout(timer);
                resolve(value);
            },
            () => {
                clearTimeout(timer);
                resolve(undefined);
            },
        );
    });
}

async function pythonApi(): Promise<PythonApi | undefined> {
    const ext = vscode.extensions.getExtension<PythonApi>(PYTHON_EXTENSION_ID);
    if (!ext) {
        return undefined;
    }
    if (ext.isActive) {
        return ext.exports;
    }
    return withTimeout(ext.activate(), PYTHON_API_TIMEOUT_MS);
}

/** The interpreter selected in the Python extension, if it is installed and has one. */
async function selectedInterpreter(log: vscode.LogOutputChannel): Promise<string | undefined> {
    try {
        const api = await pythonApi();
        if (!api) {
            return undefined;
        }
        const resource = vscode.workspace.workspaceFolders?.[0]?.uri;
        if (api.environments) {
            const envPath = api.environments.getActiveEnvironmentPath(resource);
            const resolved = await withTimeout(api.environments.resolveEnvironment(envPath), PYTHON_API_TIMEOUT_MS);
            return resolved?.executable.uri?.fsPath ?? envPath.path;
        }
        return api.settings?.getExecutionDetails(resource).execCommand?.[0];
    } catch (error) {
        log.warn(`could not ask the Python extension for the selected interpreter: ${String(error)}`);
        return undefined;
    }
}

function isFile(file: string): boolean {
    try {
        return fs.statSync(file).isFile();
    } catch {
        return false;
    }
}

// ---------------------------------------------------------------------------------------------------------
// Report documents

class ReportDocuments implements vscode.TextDocumentContentProvider {
    private readonly contents = new Map<string, string>();
    private readonly changed = new vscode.EventEmitter<vscode.Uri>();
    readonly onDidChange = this.changed.event;

    provideTextDocumentContent(uri: vscode.Uri): string {
        return this.contents.get(uri.toString()) ?? '_This Kerncast report is no longer available: run Kerncast: Show Kernel Report again._';
    }

    set(uri: vscode.Uri, markdown: string): void {
        this.contents.set(uri.toString(), markdown);
        this.changed.fire(uri);
    }

    dispose(): void {
        this.changed.dispose();
        this.contents.clear();
    }
}

// ---------------------------------------------------------------------------------------------------------
// The extension

/** Removes client-owned commands from the server's capabilities before the client registers them. */
class ClientCommandsFeature implements StaticFeature {
    fillClientCapabilities(): void {
        // nothing to announce
    }

    preInitialize(capabilities: ServerCapabilities): void {
        const provider = capabilities.executeCommandProvider;
        if (provider?.commands) {
            provider.commands = withoutClientCommands(provider.commands, CLIENT_COMMANDS);
        }
    }

    initialize(): void {
        // all work is done in preInitialize
    }

    getState(): { kind: 'static' } {
        return { kind: 'static' };
    }

    clear(): void {
        // no state
    }
}

/** A language client whose start-up failures are reported by the extension, once, with the fix. */
class KerncastLanguageClient extends LanguageClient {
    quietErrors = false;

    override error(message: string, data?: unknown, showNotification: boolean | 'force' = true): void {
        super.error(message, data, this.quietErrors ? false : showNotification);
    }
}

type ServerState = 'starting' | 'running' | 'failed' | 'stopped';

class Kerncast implements vscode.Disposable {
    private client: KerncastLanguageClient | undefined;
    private command: ServerCommand | undefined;
    private interpreter: string | undefined;
    private state: ServerState = 'stopped';
    private lifecycle: Promise<void> = Promise.resolve();
    private restartTimes: number[] = [];
    private readonly disposables: vscode.Disposable[] = [];
    private readonly status: vscode.StatusBarItem;
    private readonly reports = new ReportDocuments();
    /** The report page's view, and the URI (as the server knows it) of the document it shows. */
    private panel: vscode.WebviewPanel | undefined;
    private panelSource: string | undefined;
    /** One decoration type per intensity band of the per-line cost. */
    private readonly lineDecorations: vscode.TextEditorDecorationType[];

    constructor(private readonly log: vscode.LogOutputChannel) {
        this.status = vscode.window.createStatusBarItem('kerncast.gpu', vscode.StatusBarAlignment.Right, 100);
        this.status.name = 'Kerncast GPU';
        this.lineDecorations = BANDS.map((_, band) =>
            vscode.window.createTextEditorDecorationType({
                backgroundColor: bandColor(band),
                isWholeLine: true,
                after: { color: new vscode.ThemeColor('editorCodeLens.foreground'), margin: '0 0 0 1.5em' },
            }),
        );
        this.disposables.push(
            ...this.lineDecorations,
            vscode.commands.registerCommand(CMD_SHOW_REPORT_PAGE, (...args: unknown[]) => this.showReportPage(args)),
            vscode.languages.onDidChangeDiagnostics((e) => this.onDiagnostics(e.uris)),
            vscode.window.onDidChangeActiveTextEditor((editor) => {
                if (editor) {
                    void this.decorate(editor);
                }
            }),
            this.status,
            this.reports,
            vscode.workspace.registerTextDocumentContentProvider(REPORT_SCHEME, this.reports),
            vscode.commands.registerCommand(CMD_SELECT_GPU, (...args: unknown[]) => this.selectGpu(args)),
            vscode.commands.registerCommand(CMD_SHOW_REPORT, (...args: unknown[]) => this.showReport(args)),
            vscode.commands.registerCommand(CMD_RESTART, () => this.restart('restart requested')),
            vscode.workspace.onDidChangeConfiguration((e) => this.onConfigurationChanged(e)),
        );
        this.updateStatus();
        this.status.show();
    }

    // --- lifecycle --------------------------------------------------------------------------------------

    /** Runs lifecycle steps one after another, so that restarts never overlap. */
    private serialize(step: () => Promise<void>): Promise<void> {
        this.lifecycle = this.lifecycle.then(step, step);
        return this.lifecycle;
    }

    start(): Promise<void> {
        return this.serialize(() => this.doStart());
    }

    restart(reason: string): Promise<void> {
        return this.serialize(async () => {
            this.log.info(`restarting the server: ${reason}`);
            await this.doStop();
            await this.doStart();
        });
    }

    stop(): Promise<void> {
        return this.serialize(() => this.doStop());
    }

    async watchPythonEnvironment(): Promise<void> {
        const api = await pythonApi();
        const event = api?.environments?.onDidChangeActiveEnvironmentPath;
        if (!event) {
            return;
        }
        this.disposables.push(
            event(() => {
                if (this.command?.source !== 'setting') {
                    void this.restart('the selected Python interpreter changed');
                }
            }),
        );
    }

    private setState(state: ServerState): void {
        this.state = state;
        this.updateStatus();
    }

    private async doStart(): Promise<void> {
        this.setState('starting');
        const config = vscode.workspace.getConfiguration(SECTION);
        const setting: unknown = config.get('server.command');
        // The Python extension is only asked when the setting leaves the choice to the extension.
        this.interpreter = settingIsEmpty(setting) ? await selectedInterpreter(this.log) : undefined;
        let command: ServerCommand;
        try {
            command = resolveServerCommand({
                setting,
                pythonPath: this.interpreter,
                platform: process.platform,
                env: process.env,
                isFile,
                pathContext: workspacePathContext(),
            });
        } catch (error) {
            this.setState('failed');
            this.notifyStartFailure(`${error instanceof Error ? error.message : String(error)}`);
            return;
        }
        this.command = command;
        if (!command.found) {
            this.log.error(`no kerncast executable: ${describeSource(command, this.interpreter)}`);
            this.setState('failed');
            this.notifyStartFailure(
                `Kerncast: the language server was not found${
                    this.interpreter ? ` in the selected Python environment (${this.interpreter}) or` : ''
                } on PATH. Install it with \`${INSTALL_HINT}\` or set kerncast.server.command.`,
                true,
            );
            return;
        }
        this.log.info(`starting ${formatCommand(command)} (${describeSource(command, this.interpreter)})`);

        const workspaceFolder = workspacePathContext().workspaceFolder;
        const serverOptions: ServerOptions = {
            command: command.command,
            args: command.args,
            transport: TransportKind.stdio,
            options: { cwd: workspaceFolder, env: process.env },
        };
        const client = new KerncastLanguageClient(SECTION, 'Kerncast', serverOptions, this.clientOptions());
        client.registerFeature(new ClientCommandsFeature());
        client.onDidChangeState((e) => {
            if (client !== this.client) {
                return;
            }
            if (e.newState === State.Running) {
                this.setState('running');
            } else if (e.newState === State.Starting) {
                this.setState('starting');
            }
        });
        this.client = client;
        this.restartTimes = [];
        client.quietErrors = true;
        try {
            await client.start();
            client.quietErrors = false;
            this.setState('running');
        } catch (error) {
            this.log.error(`the server did not start: ${errorText(error)}`);
            this.client = undefined;
            this.setState('failed');
            void client.dispose(STOP_TIMEOUT_MS).catch(() => undefined);
            this.notifyStartFailure(startFailureMessage(command, errorText(error), this.interpreter));
        }
    }

    private async doStop(): Promise<void> {
        const client = this.client;
        this.client = undefined;
        if (client) {
            client.quietErrors = true;
            try {
                if (client.isRunning()) {
                    await client.stop(STOP_TIMEOUT_MS);
                }
            } catch (error) {
                this.log.warn(`stopping the server: ${errorText(error)}`);
            }
            await client.dispose(STOP_TIMEOUT_MS).catch(() => undefined);
        }
        this.setState('stopped');
    }

    private clientOptions(): LanguageClientOptions {
        const selector: { scheme: string; language?: string; pattern?: string }[] = [];
        for (const scheme of ['file', 'untitled']) {
            for (const language of LANGUAGES) {
                selector.push({ scheme, language });
            }
        }
        // .cu files that a files.associations setting maps to plain C++.
        selector.push({ scheme: 'file', pattern: '**/*.{cu,cuh}' });

        return {
            documentSelector: selector,
            initializationOptions: () => currentOptions(this.log),
            outputChannel: this.log,
            errorHandler: {
                error: (_error, _message, count) => ({
                    action: (count ?? 0) <= 3 ? ErrorAction.Continue : ErrorAction.Shutdown,
                }),
                closed: () => this.onConnectionClosed(),
            },
            middleware: {
                workspace: {
                    // A server that pulls `workspace/configuration` gets the same normalised options.
                    configuration: async (params, token, next) => {
                        const result = await next(params, token);
                        if (!Array.isArray(result)) {
                            return result;
                        }
                        const options = readerFromObject({ [SECTION]: currentOptions() });
                        return params.items.map((item, i): unknown => {
                            const section = item.section;
                            if (section === SECTION || section?.startsWith(`${SECTION}.`)) {
                                return options(section) ?? result[i];
                            }
                            return result[i];
                        });
                    },
                },
                handleRegisterCapability: async (params: RegistrationParams, next) => {
                    for (const registration of params.registrations) {
                        const opts = registration.registerOptions as { commands?: string[] } | undefined;
                        if (registration.method === ExecuteCommandRequest.method && opts?.commands) {
                            opts.commands = withoutClientCommands(opts.commands, CLIENT_COMMANDS);
                        }
                    }
                    await next(params, new CancellationTokenSource().token);
                },
            },
        };
    }

    /** Restarts a server that stopped, at most four times in three minutes, then says so. */
    private onConnectionClosed(): { action: CloseAction; handled: boolean } {
        if (this.state !== 'running') {
            // Failed during start-up: doStart reports it.
            return { action: CloseAction.DoNotRestart, handled: true };
        }
        const now = Date.now();
        this.restartTimes = this.restartTimes.filter((t) => now - t < 3 * 60 * 1000);
        this.restartTimes.push(now);
        if (this.restartTimes.length > 4) {
            this.setState('failed');
            this.notifyStartFailure(
                'Kerncast: the language server stopped five times in the last three minutes and will not be restarted. ' +
                    'See the Kerncast output for its last messages.',
            );
            return { action: CloseAction.DoNotRestart, handled: true };
        }
        this.log.warn('the server stopped; restarting it');
        return { action: CloseAction.Restart, handled: true };
    }

    private notifyStartFailure(message: string, notFound = false): void {
        const openSettings = 'Open Settings';
        const copy = 'Copy Install Command';
        const output = 'Show Output';
        const buttons = notFound ? [openSettings, copy, output] : [openSettings, output];
        void vscode.window.showErrorMessage(message, ...buttons).then(async (choice) => {
            if (choice === openSettings) {
                await vscode.commands.executeCommand('workbench.action.openSettings', 'kerncast.server.command');
            } else if (choice === copy) {
                await vscode.env.clipboard.writeText(INSTALL_HINT);
            } else if (choice === output) {
                this.log.show(true);
            }
        });
    }

    // --- settings ---------------------------------------------------------------------------------------

    private onConfigurationChanged(e: vscode.ConfigurationChangeEvent): void {
        if (e.affectsConfiguration(`${SECTION}.server.command`)) {
            void this.restart('kerncast.server.command changed');
            return;
        }
        if (e.affectsConfiguration(`${SECTION}.gpu`)) {
            this.updateStatus();
        }
        if (e.affectsConfiguration(`${SECTION}.lineCosts`)) {
            for (const editor of vscode.window.visibleTextEditors) {
                void this.decorate(editor);
            }
        }
        if (!SERVER_SETTING_KEYS.some((key) => e.affectsConfiguration(`${SECTION}.${key}`))) {
            return;
        }
        const client = this.client;
        if (client?.isRunning()) {
            const params = didChangeConfigurationParams(currentOptions(this.log));
            client.sendNotification(DidChangeConfigurationNotification.type, params).catch((error: unknown) => {
                this.log.error(`sending the new settings: ${errorText(error)}`);
            });
        }
    }

    // --- status bar -------------------------------------------------------------------------------------

    private updateStatus(): void {
        const gpu = currentGpu();
        const text = statusBarText(gpu);
        this.status.backgroundColor = undefined;
        switch (this.state) {
            case 'running':
                this.status.text = text;
                this.status.tooltip = `Kerncast predicts for the ${gpuLabel(gpu)} profile (${gpu}). Click to choose another GPU.`;
                this.status.command = CMD_SELECT_GPU;
                break;
            case 'starting':
                this.status.text = text.replace('$(pulse)', '$(sync~spin)');
                this.status.tooltip = 'Kerncast: starting the language server';
                this.status.command = CMD_SELECT_GPU;
                break;
            case 'failed':
                this.status.text = text.replace('$(pulse)', '$(error)');
                this.status.tooltip = 'Kerncast: the language server is not running. Click to restart it.';
                this.status.command = CMD_RESTART;
                this.status.backgroundColor = new vscode.ThemeColor('statusBarItem.errorBackground');
                break;
            default:
                this.status.text = text;
                this.status.tooltip = 'Kerncast: the language server is stopped. Click to choose the GPU.';
                this.status.command = CMD_SELECT_GPU;
        }
    }

    // --- commands ---------------------------------------------------------------------------------------

    private runningClient(what: string): KerncastLanguageClient | undefined {
        const client = this.client;
        if (client?.isRunning()) {
            return client;
        }
        void vscode.window
            .showErrorMessage(`Kerncast: ${what} needs the language server, which is not running.`, 'Restart Server')
            .then((choice) => {
                if (choice) {
                    void vscode.commands.executeCommand(CMD_RESTART);
                }
            });
        return undefined;
    }

    /**
     * `kerncast.selectGpu`: the extension owns it (the server's command of that id is not advertised to VS
     * Code). With a GPU id as its argument (the server's "predict for GPU X" code action) it switches to that
     * GPU; without one it asks with a picker.
     */
    private async selectGpu(args: unknown[] = []): Promise<void> {
        const current = currentGpu();
        const named = gpuIdArgument(args);
        if (named !== undefined) {
            if (named !== current) {
                await this.setGpu(named);
            }
            return;
        }
        let gpus: GpuInfo[] | undefined;
        let fromServer = false;
        const client = this.client;
        if (client?.isRunning()) {
            try {
                const result: unknown = await client.sendRequest(ExecuteCommandRequest.type, {
                    command: SERVER_CMD_LIST_GPUS,
                    arguments: [],
                });
                gpus = parseGpuList(result);
                fromServer = true;
            } catch (error) {
                this.log.error(`${SERVER_CMD_LIST_GPUS}: ${errorText(error)}`);
            }
        }
        if (!gpus || gpus.length === 0) {
            gpus = KNOWN_GPU_IDS.map((id) => ({ id, name: gpuLabel(id), calibrated: false }));
        }
        const items = gpuPickItems(gpus, current).map((item) =>
            fromServer ? item : { ...item, detail: 'Shipped profile (the server did not list its GPUs)' },
        );
        const picked = await vscode.window.showQuickPick(items, {
            title: 'Kerncast: GPU to predict for',
            placeHolder: `Active: ${gpuLabel(current)} (${current})`,
            matchOnDescription: true,
            matchOnDetail: true,
        });
        if (!picked || picked.gpuId === current) {
            return;
        }
        await this.setGpu(picked.gpuId);
    }

    /** Writes the GPU setting where it is set (the workspace's, else the user's); the server follows it. */
    private async setGpu(gpuId: string): Promise<void> {
        const config = vscode.workspace.getConfiguration(SECTION);
        const inspected = config.inspect('gpu');
        const target =
            inspected?.workspaceValue !== undefined
                ? vscode.ConfigurationTarget.Workspace
                : vscode.ConfigurationTarget.Global;
        await config.update('gpu', gpuId, target);
    }

    private activeEditorInfo(client: KerncastLanguageClient | undefined) {
        const editor = vscode.window.activeTextEditor;
        if (!editor || !isKerncastDocument(editor.document)) {
            return undefined;
        }
        const uri = client ? client.code2ProtocolConverter.asUri(editor.document.uri) : editor.document.uri.toString();
        const pos = editor.selection.active;
        return { uri, position: { line: pos.line, character: pos.character } };
    }

    private async showReport(args: unknown[]): Promise<void> {
        const requestArgs = reportArguments(args, this.activeEditorInfo(this.client));
        if (!requestArgs) {
            void vscode.window.showInformationMessage(
                'Kerncast: put the cursor inside a kernel of a .cu or .ptx file to see its report.',
            );
            return;
        }
        const client = this.runningClient('the kernel report');
        if (!client) {
            return;
        }
        const [sourceUri, target] = requestArgs;
        let result: unknown;
        try {
            result = await vscode.window.withProgress(
                {
                    location: vscode.ProgressLocation.Window,
                    title: `Kerncast: report${typeof target === 'string' ? ` of ${target}` : ''}`,
                },
                () =>
                    client.sendRequest(ExecuteCommandRequest.type, {
                        command: SERVER_CMD_SHOW_REPORT,
                        arguments: requestArgs,
                    }),
            );
        } catch (error) {
            void vscode.window.showErrorMessage(`Kerncast: the report failed: ${errorText(error)}`);
            return;
        }
        const markdown = reportMarkdown(result);
        if (markdown === undefined) {
            void vscode.window.showInformationMessage(
                typeof target === 'string'
                    ? `Kerncast: no report for the kernel ${target} (save the file to analyse it again).`
                    : 'Kerncast: no kernel at the cursor. Put the cursor inside a kernel to see its report.',
            );
            return;
        }
        const kernel = reportKernelName(target, markdown);
        const uri = vscode.Uri.from({ scheme: REPORT_SCHEME, path: reportDocumentPath(sourceUri, kernel) });
        this.reports.set(uri, markdown);
        const document = await vscode.workspace.openTextDocument(uri);
        try {
            await vscode.commands.executeCommand('markdown.showPreviewToSide', uri);
        } catch (error) {
            this.log.info(`markdown preview not available (${errorText(error)}); showing the report as text`);
            await vscode.window.showTextDocument(document, { viewColumn: vscode.ViewColumn.Beside, preview: true });
        }
    }

    // --- the report page -----------------------------------------------------------------------------

    private async showReportPage(args: unknown[]): Promise<void> {
        const client = this.runningClient('the report page');
        if (!client) {
            return;
        }
        const source = uriString(args[0]) ?? this.activeEditorInfo(client)?.uri;
        if (!source) {
            void vscode.window.showInformationMessage('Kerncast: open a .cu or .ptx file to see its report page.');
            return;
        }
        let result: unknown;
        try {
            result = await client.sendRequest(ExecuteCommandRequest.type, {
                command: SERVER_CMD_REPORT_PAGE,
                arguments: [source],
            });
        } catch (error) {
            void vscode.window.showErrorMessage(`Kerncast: the report page failed: ${errorText(error)}`);
            return;
        }
        const page = typeof result === 'object' && result !== null ? (result as { html?: unknown }).html : undefined;
        const panel =
            this.panel ??
            vscode.window.createWebviewPanel(REPORT_VIEW_TYPE, 'Kerncast report', vscode.ViewColumn.Beside, {
                enableScripts: true, // the page's one script, by nonce: it reports clicks on per-line rows
                enableCommandUris: false,
                enableForms: false,
                localResourceRoots: [],
            });
        const html = webviewHtml(page, makeNonce(), panel.webview.cspSource);
        if (html === undefined) {
            if (!this.panel) {
                panel.dispose();
            }
            void vscode.window.showInformationMessage('Kerncast: no report yet for this file: save it to analyse it.');
            return;
        }
        if (!this.panel) {
            this.panel = panel;
            this.disposables.push(
                panel.webview.onDidReceiveMessage((message: unknown) => this.onPanelMessage(message)),
                panel.onDidDispose(() => {
                    this.panel = undefined;
                    this.panelSource = undefined;
                }),
            );
        }
        this.panelSource = source;
        panel.title = `Kerncast: ${reportDocumentPath(source, 'page').split('/')[1]}`;
        panel.webview.html = html;
        panel.reveal(vscode.ViewColumn.Beside, true);
    }

    /**
     * A message of the report page: only `{type: 'reveal', line}` is acted on, and only in the document the
     * page was made for, when that document is open or inside a workspace folder. Nothing a message says is
     * used as a command, a URI or a path.
     */
    async onPanelMessage(message: unknown): Promise<void> {
        const source = this.panelSource;
        if (source === undefined) {
            return;
        }
        const uri = vscode.Uri.parse(source);
        const open = vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri.toString());
        if (!open && vscode.workspace.getWorkspaceFolder(uri) === undefined) {
            this.log.info(`report page: ${source} is neither open nor in the workspace; not opened`);
            return;
        }
        const document = open ?? (await vscode.workspace.openTextDocument(uri));
        const reveal = parseWebviewMessage(message, document.lineCount);
        if (!reveal) {
            this.log.info('report page: ignored a message that is not a line to show');
            return;
        }
        const at = new vscode.Range(reveal.line, 0, reveal.line, 0);
        await vscode.window.showTextDocument(document, { viewColumn: vscode.ViewColumn.One, selection: at });
    }

    // --- per-line cost ----------------------------------------------------------------------------------

    private onDiagnostics(uris: readonly vscode.Uri[]): void {
        const changed = new Set(uris.map((u) => u.toString()));
        for (const editor of vscode.window.visibleTextEditors) {
            if (changed.has(editor.document.uri.toString())) {
                void this.decorate(editor);
            }
        }
    }

    /** Marks the editor's hot lines (a new analysis was published for it), or clears them when turned off. */
    private async decorate(editor: vscode.TextEditor): Promise<void> {
        if (!isKerncastDocument(editor.document)) {
            return;
        }
        const enabled = vscode.workspace.getConfiguration(SECTION).get<boolean>('lineCosts.enabled') !== false;
        const client = this.client;
        let result: unknown;
        if (enabled && client?.isRunning()) {
            try {
                result = await client.sendRequest(ExecuteCommandRequest.type, {
                    command: SERVER_CMD_LINE_COSTS,
                    arguments: [client.code2ProtocolConverter.asUri(editor.document.uri)],
                });
            } catch (error) {
                this.log.warn(`${SERVER_CMD_LINE_COSTS}: ${errorText(error)}`);
            }
        }
        const bands = byBand(enabled ? parseLineCosts(result, editor.document.lineCount) : []);
        bands.forEach((costs, band) => {
            editor.setDecorations(
                this.lineDecorations[band],
                costs.map((c) => ({
                    range: new vscode.Range(c.line, 0, c.line, 0),
                    renderOptions: { after: { contentText: afterText(c) } },
                })),
            );
        });
    }

    dispose(): void {
        this.panel?.dispose();
        for (const d of this.disposables) {
            d.dispose();
        }
    }
}

function settingIsEmpty(setting: unknown): boolean {
    try {
        return settingWords(setting) === undefined;
    } catch {
        return false;
    }
}

function isKerncastDocument(document: vscode.TextDocument): boolean {
    return LANGUAGES.includes(document.languageId) || EXTENSIONS.test(document.fileName);
}

function errorText(error: unknown): string {
    if (error instanceof Error) {
        return error.message;
    }
    if (typeof error === 'object' && error !== null && typeof (error as { message?: unknown }).message === 'string') {
        return (error as { message: string }).message;
    }
    return String(error);
}

let instance: Kerncast | undefined;

export function activate(context: vscode.ExtensionContext): void {
    const log = vscode.window.createOutputChannel('Kerncast', { log: true });
    context.subscriptions.push(log);
    instance = new Kerncast(log);
    context.subscriptions.push(instance);
    // Not awaited: commands and the status bar work while the server starts.
    void instance.start().then(() => instance?.watchPythonEnvironment());
}

export async function deactivate(): Promise<void> {
    const current = instance;
    instance = undefined;
    await current?.stop();
}
