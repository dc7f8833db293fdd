/**
 * Settings -> the server's `initializationOptions`.
 *
 * Pure: no `vscode` import, so it runs under plain node in the unit tests. The extension passes a reader
 * (`key` relative to the `kerncast` section -> the configured value) and a few facts about the workspace.
 */

import * as path from 'path';

/** One kernel's launch configuration, as the server reads it. */
export interface LaunchConfig {
    grid?: number | number[];
    block?: number | number[];
    dynamicSharedBytes?: number;
    /** Values of integer kernel parameters by name. */
    params?: Record<string, number>;
}

export interface Thresholds {
    uncoalescedExcessPercent: number;
    bankConflictWays: number;
    energyHotspotShare: number;
    lowOccupancy: number;
}

/** The time models the server offers (`kerncast.timeModel`). */
export const TIME_MODELS = ['kerncast', 'thesis', 'mwp-cwp'] as const;
export type TimeModel = (typeof TIME_MODELS)[number];

/** The power models the server offers (`kerncast.powerModel`). */
export const POWER_MODELS = ['auto', 'statistical', 'events'] as const;
export type PowerModel = (typeof POWER_MODELS)[number];

/** The server's configuration (camelCase keys), sent as `initializationOptions` and on every change. */
export interface KerncastOptions {
    gpu: string;
    /** null: the server follows the project's compile_commands.json, else the GPU profile (h100 -> sm_90) */
    arch: string | null;
    nvccPath: string | null;
    includeDirs: string[];
    defines: string[];
    launch: Record<string, LaunchConfig>;
    loops: number | null;
    timeModel: TimeModel;
    powerModel: PowerModel;
    thresholds: Thresholds;
    analyzeOnChange: boolean;
    timeoutSeconds: number;
    /** MiB for all the compiles the server runs at once (each gets an equal share); null: the server's default */
    compileMemoryMB: number | null;
    compileCommands: boolean;
    compileCommandsDir: string | null;
    preferSystemToolkit: boolean;
}

export const DEFAULT_OPTIONS: Readonly<KerncastOptions> = Object.freeze({
    gpu: 'v100',
    arch: null,
    nvccPath: null,
    includeDirs: [],
    defines: [],
    launch: {},
    loops: null,
    timeModel: 'kerncast',
    powerModel: 'auto',
    thresholds: Object.freeze({
        uncoalescedExcessPercent: 25,
        bankConflictWays: 2,
        energyHotspotShare: 0.2,
        lowOccupancy: 0.25,
    }),
    analyzeOnChange: true,
    timeoutSeconds: 120,
    compileMemoryMB: null,
    compileCommands: true,
    compileCommandsDir: null,
    preferSystemToolkit: false,
});

/** The least `compileMemoryMB` the server accepts: two compiles at once, each needing some hundreds of MiB. */
export const MIN_COMPILE_MEMORY_MB = 512;

/** Every setting id (relative to `kerncast.`) that is part of the server's configuration. */
export const SERVER_SETTING_KEYS: readonly string[] = [
    'gpu',
    'arch',
    'nvccPath',
    'includeDirs',
    'defines',
    'launch',
    'loops',
    'timeModel',
    'powerModel',
    'thresholds.uncoalescedExcessPercent',
    'thresholds.bankConflictWays',
    'thresholds.energyHotspotShare',
    'thresholds.lowOccupancy',
    'analyzeOnChange',
    'timeoutSeconds',
    'compileMemoryMB',
    'compileCommands',
    'compileCommandsDir',
    'preferSystemToolkit',
];

/** Reads one setting; `key` is relative to the `kerncast` section, e.g. `thresholds.lowOccupancy`. */
export type SettingReader = (key: string) => unknown;

/** What variable substitution in path settings needs to know. */
export interface PathContext {
    /** File system path of the first workspace folder, if any. */
    workspaceFolder?: string;
    /** The user's home directory. */
    home?: string;
    /** Environment for `${env:NAME}`. */
    env?: Record<string, string | undefined>;
}

export interface BuildResult {
    options: KerncastOptions;
    /** One line per setting that had a value of the wrong shape and was replaced by its default. */
    problems: string[];
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
    return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isFiniteNumber(value: unknown): value is number {
    return typeof value === 'number' && Number.isFinite(value);
}

/**
 * Replaces `${workspaceFolder}`, `${userHome}`, `${env:NAME}` and a leading `~` in a path setting.
 * Unknown variables are left as they are.
 */
export function expandVariables(value: string, ctx: PathContext): string {
    let out = value.replace(/\$\{(workspaceFolder|userHome|env:([A-Za-z_][A-Za-z0-9_]*))\}/g, (whole, name: string, envName?: string) => {
        if (name === 'workspaceFolder') {
            return ctx.workspaceFolder ?? whole;
        }
        if (name === 'userHome') {
            return ctx.home ?? whole;
        }
        if (envName !== undefined) {
            return ctx.env?.[envName] ?? '';
        }
        return whole;
    });
    if (ctx.home && (out === '~' || out.startsWith('~/') || out.startsWith('~\\'))) {
        out = ctx.home + out.slice(1);
    }
    return out;
}

/** Whether a `kerncast.gpu` value names a profile file rather than a profile id. */
export function isProfilePath(value: string): boolean {
    return /\.toml$/i.test(value) || value.includes('/') || value.includes('\\');
}

/** Expands variables and makes a relative path absolute against the workspace folder (when there is one). */
export function resolvePathSetting(value: string, ctx: PathContext): string {
    const expanded = expandVariables(value.trim(), ctx);
    if (ctx.workspaceFolder && expanded !== '' && !path.isAbsolute(expanded) && !path.win32.isAbsolute(expanded)) {
        return path.join(ctx.workspaceFolder, expanded);
    }
    return expanded;
}

function readString(read: SettingReader, key: string, fallback: string, problems: string[]): string {
    const value = read(key);
    if (value === undefined || value === null) {
        return fallback;
    }
    if (typeof value !== 'string' || value.trim() === '') {
        problems.push(`kerncast.${key}: expected a non-empty string, using ${JSON.stringify(fallback)}`);
        return fallback;
    }
    return value.trim();
}

function readBoolean(read: SettingReader, key: string, fallback: boolean, problems: string[]): boolean {
    const value = read(key);
    if (typeof value === 'boolean') {
        return value;
    }
    if (value !== undefined && value !== null) {
        problems.push(`kerncast.${key}: expected true or false, using ${fallback}`);
    }
    return fallback;
}

/** A path setting that may be unset (null, undefined or ''), resolved against the workspace; anything else is
 *  reported and ignored, so a mistyped value never reaches nvcc's command line. */
function readOptionalPath(read: SettingReader, key: string, ctx: PathContext, problems: string[]): string | null {
    const value = read(key);
    if (typeof value === 'string' && value.trim() !== '') {
        return resolvePathSetting(value, ctx);
    }
    if (value !== undefined && value !== null && value !== '') {
        problems.push(`kerncast.${key}: expected a path or null, ignored`);
    }
    return null;
}

function readStringList(read: SettingReader, key: string, problems: string[]): string[] {
    const value = read(key);
    if (value === undefined || value === null) {
        return [];
    }
    if (!Array.isArray(value)) {
        problems.push(`kerncast.${key}: expected an array of strings, ignored`);
        return [];
    }
    const out: string[] = [];
    for (const item of value) {
        if (typeof item === 'string' && item.trim() !== '') {
            out.push(item.trim());
        } else {
            problems.push(`kerncast.${key}: ignored the entry ${JSON.stringify(item)} (not a non-empty string)`);
        }
    }
    return out;
}

function readNumber(
    read: SettingReader,
    key: string,
    fallback: number,
    problems: string[],
    min: number,
    max = Number.POSITIVE_INFINITY,
): number {
    const value = read(key);
    if (value === undefined || value === null) {
        return fallback;
    }
    if (!isFiniteNumber(value) || value < min || value > max) {
        const range = max === Number.POSITIVE_INFINITY ? `>= ${min}` : `in [${min}, ${max}]`;
        problems.push(`kerncast.${key}: expected a number ${range}, using ${fallback}`);
        return fallback;
    }
    return value;
}

/** A grid or block size: a positive integer or an array of one to three positive integers. */
export function isDim(value: unknown): value is number | number[] {
    const positiveInt = (v: unknown): boolean => typeof v === 'number' && Number.isInteger(v) && v >= 1;
    if (Array.isArray(value)) {
        return value.length >= 1 && value.length <= 3 && value.every(positiveInt);
    }
    return positiveInt(value);
}

const DEFINE_RE = /^[A-Za-z_][A-Za-z0-9_]*(=.*)?$/;

/** Validates the `kerncast.launch` object kernel by kernel; a bad field is dropped, the rest is kept. */
export function normalizeLaunch(value: unknown, problems: string[]): Record<string, LaunchConfig> {
    const out: Record<string, LaunchConfig> = {};
    if (value === undefined || value === null) {
        return out;
    }
    if (!isPlainObject(value)) {
        problems.push('kerncast.launch: expected an object mapping kernel names to launch configurations, ignored');
        return out;
    }
    for (const [kernel, raw] of Object.entries(value)) {
        if (!isPlainObject(raw)) {
            problems.push(`kerncast.launch.${kernel}: expected an object, ignored`);
            continue;
        }
        const launch: LaunchConfig = {};
        for (const [field, fieldValue] of Object.entries(raw)) {
            switch (field) {
                case 'grid':
                case 'block':
                    if (isDim(fieldValue)) {
                        launch[field] = Array.isArray(fieldValue) ? [...fieldValue] : fieldValue;
                    } else {
                        problems.push(
                            `kerncast.launch.${kernel}.${field}: expected a positive integer or [x, y, z], ignored`,
                        );
                    }
                    break;
                case 'dynamicSharedBytes':
                    if (typeof fieldValue === 'number' && Number.isInteger(fieldValue) && fieldValue >= 0) {
                        launch.dynamicSharedBytes = fieldValue;
                    } else {
                        problems.push(
                            `kerncast.launch.${kernel}.dynamicSharedBytes: expected an integer >= 0, ignored`,
                        );
                    }
                    break;
                case 'params':
                    if (isPlainObject(fieldValue)) {
                        const params: Record<string, number> = {};
                        for (const [name, v] of Object.entries(fieldValue)) {
                            if (typeof v === 'number' && Number.isInteger(v)) {
                                params[name] = v;
                            } else {
                                problems.push(`kerncast.launch.${kernel}.params.${name}: expected an integer, ignored`);
                            }
                        }
                        launch.params = params;
                    } else {
                        problems.push(`kerncast.launch.${kernel}.params: expected an object of numbers, ignored`);
                    }
                    break;
                default:
                    problems.push(`kerncast.launch.${kernel}.${field}: unknown field, ignored`);
            }
        }
        out[kernel] = launch;
    }
    return out;
}

/** Builds the server's options from the settings, replacing malformed values by their defaults. */
export function buildInitializationOptions(read: SettingReader, ctx: PathContext = {}): BuildResult {
    const problems: string[] = [];
    const d = DEFAULT_OPTIONS;

    // A profile id (matched case-insensitively) or the path of a profile's .toml file.
    const rawGpu = readString(read, 'gpu', d.gpu, problems);
    const gpu = isProfilePath(rawGpu) ? resolvePathSetting(rawGpu, ctx) : rawGpu.toLowerCase();
    const rawArch = read('arch');
    const arch = rawArch === undefined || rawArch === null || rawArch === '' ? null : readString(read, 'arch', '', problems) || null;
    if (arch !== null && !/^(sm|compute)_\d+[a-z]?$/.test(arch)) {
        problems.push(`kerncast.arch: ${JSON.stringify(arch)} does not look like an nvcc -arch value (e.g. sm_75)`);
    }

    const nvccPath = readOptionalPath(read, 'nvccPath', ctx, problems);

    const includeDirs = readStringList(read, 'includeDirs', problems).map((dir) => resolvePathSetting(dir, ctx));
    const defines = readStringList(read, 'defines', problems).filter((define) => {
        if (DEFINE_RE.test(define)) {
            return true;
        }
        problems.push(`kerncast.defines: ignored ${JSON.stringify(define)} (expected NAME or NAME=VALUE)`);
        return false;
    });

    let loops: number | null = null;
    const rawLoops = read('loops');
    if (typeof rawLoops === 'number' && Number.isInteger(rawLoops) && rawLoops >= 1) {
        loops = rawLoops;
    } else if (rawLoops !== undefined && rawLoops !== null) {
        problems.push('kerncast.loops: expected an integer >= 1 or null, ignored');
    }

    let compileMemoryMB: number | null = null;
    const rawMemory = read('compileMemoryMB');
    if (typeof rawMemory === 'number' && Number.isInteger(rawMemory) && rawMemory >= MIN_COMPILE_MEMORY_MB) {
        compileMemoryMB = rawMemory;
    } else if (rawMemory !== undefined && rawMemory !== null) {
        problems.push(`kerncast.compileMemoryMB: expected an integer >= ${MIN_COMPILE_MEMORY_MB} or null, ignored`);
    }

    const rawTimeModel = read('timeModel');
    let timeModel: TimeModel = d.timeModel;
    if ((TIME_MODELS as readonly unknown[]).includes(rawTimeModel)) {
        timeModel = rawTimeModel as TimeModel;
    } else if (rawTimeModel !== undefined && rawTimeModel !== null) {
        problems.push(`kerncast.timeModel: expected one of ${TIME_MODELS.join(', ')}, using ${d.timeModel}`);
    }

    const rawPowerModel = read('powerModel');
    let powerModel: PowerModel = d.powerModel;
    if ((POWER_MODELS as readonly unknown[]).includes(rawPowerModel)) {
        powerModel = rawPowerModel as PowerModel;
    } else if (rawPowerModel !== undefined && rawPowerModel !== null) {
        problems.push(`kerncast.powerModel: expected one of ${POWER_MODELS.join(', ')}, using ${d.powerModel}`);
    }

    const analyzeOnChange = readBoolean(read, 'analyzeOnChange', d.analyzeOnChange, problems);

    const compileCommands = readBoolean(read, 'compileCommands', d.compileCommands, problems);
    const preferSystemToolkit = readBoolean(read, 'preferSystemToolkit', d.preferSystemToolkit, problems);
    const compileCommandsDir = readOptionalPath(read, 'compileCommandsDir', ctx, problems);

    const options: KerncastOptions = {
        gpu,
        arch,
        nvccPath,
        includeDirs,
        defines,
        launch: normalizeLaunch(read('launch'), problems),
        loops,
        timeModel,
        powerModel,
        thresholds: {
            uncoalescedExcessPercent: readNumber(
                read,
                'thresholds.uncoalescedExcessPercent',
                d.thresholds.uncoalescedExcessPercent,
                problems,
                0,
            ),
            bankConflictWays: readNumber(
                read,
                'thresholds.bankConflictWays',
                d.thresholds.bankConflictWays,
                problems,
                1,
                32,
            ),
            energyHotspotShare: readNumber(
                read,
                'thresholds.energyHotspotShare',
                d.thresholds.energyHotspotShare,
                problems,
                0,
                1,
            ),
            lowOccupancy: readNumber(read, 'thresholds.lowOccupancy', d.thresholds.lowOccupancy, problems, 0, 1),
        },
        analyzeOnChange,
        timeoutSeconds: readNumber(read, 'timeoutSeconds', d.timeoutSeconds, problems, 1),
        compileMemoryMB,
        compileCommands,
        compileCommandsDir,
        preferSystemToolkit,
    };
    return { options, problems };
}

/** The payload of `workspace/didChangeConfiguration`. */
export function didChangeConfigurationParams(options: KerncastOptions): { settings: { kerncast: KerncastOptions } } {
    return { settings: { kerncast: options } };
}

/** Reads a nested plain object (e.g. the `kerncast` section as a whole) with dotted keys. */
export function readerFromObject(section: unknown): SettingReader {
    return (key: string) => {
        let current: unknown = section;
        for (const part of key.split('.')) {
            if (!isPlainObject(current)) {
                return undefined;
            }
            current = current[part];
        }
        return current;
    };
}
