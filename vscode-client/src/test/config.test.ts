import * as assert from 'node:assert/strict';
import * as path from 'node:path';
import { describe, it } from 'node:test';

import {
    buildInitializationOptions,
    DEFAULT_OPTIONS,
    didChangeConfigurationParams,
    expandVariables,
    normalizeLaunch,
    readerFromObject,
    resolvePathSetting,
} from '../config';

/** A reader over flat setting ids relative to `kerncast.`, like WorkspaceConfiguration.get. */
function reader(values: Record<string, unknown>): (key: string) => unknown {
    return (key) => values[key];
}

describe('buildInitializationOptions', () => {
    it('gives the server defaults when nothing is set', () => {
        const { options, problems } = buildInitializationOptions(reader({}));
        assert.deepEqual(options, DEFAULT_OPTIONS);
        assert.deepEqual(problems, []);
    });

    it('maps every setting to the camelCase option', () => {
        const { options, problems } = buildInitializationOptions(
            reader({
                gpu: 'A100',
                arch: 'sm_80',
                nvccPath: '/usr/local/cuda/bin/nvcc',
                includeDirs: ['/opt/include'],
                defines: ['N=128', 'USE_FAST'],
                launch: { matmul: { grid: [64, 64], block: 256, dynamicSharedBytes: 4096, params: { n: 1024 } } },
                loops: 16,
                timeModel: 'mwp-cwp',
                powerModel: 'events',
                'thresholds.uncoalescedExcessPercent': 50,
                'thresholds.bankConflictWays': 4,
                'thresholds.energyHotspotShare': 0.3,
                'thresholds.lowOccupancy': 0.5,
                analyzeOnChange: false,
                timeoutSeconds: 30,
                compileMemoryMB: 2048,
                compileCommands: false,
                compileCommandsDir: '/proj/build',
                preferSystemToolkit: true,
            }),
        );
        assert.deepEqual(problems, []);
        assert.deepEqual(options, {
            gpu: 'a100',
            arch: 'sm_80',
            nvccPath: '/usr/local/cuda/bin/nvcc',
            includeDirs: ['/opt/include'],
            defines: ['N=128', 'USE_FAST'],
            launch: { matmul: { grid: [64, 64], block: 256, dynamicSharedBytes: 4096, params: { n: 1024 } } },
            loops: 16,
            timeModel: 'mwp-cwp',
            powerModel: 'events',
            thresholds: {
                uncoalescedExcessPercent: 50,
                bankConflictWays: 4,
                energyHotspotShare: 0.3,
                lowOccupancy: 0.5,
            },
            analyzeOnChange: false,
            timeoutSeconds: 30,
            compileMemoryMB: 2048,
            compileCommands: false,
            compileCommandsDir: '/proj/build',
            preferSystemToolkit: true,
        });
    });

    it('replaces malformed values by defaults and says which', () => {
        const { options, problems } = buildInitializationOptions(
            reader({
                gpu: 42,
                nvccPath: 7,
                includeDirs: 'not-a-list',
                defines: ['OK', '1BAD', ''],
                loops: 0,
                'thresholds.energyHotspotShare': 1.5,
                'thresholds.bankConflictWays': Number.NaN,
                analyzeOnChange: 'yes',
                timeoutSeconds: -1,
                compileMemoryMB: 100,
                timeModel: 'fastest',
                powerModel: 'guess',
            }),
        );
        assert.equal(options.gpu, 'v100');
        assert.equal(options.timeModel, 'kerncast');
        assert.equal(options.powerModel, 'auto');
        assert.equal(options.nvccPath, null);
        assert.deepEqual(options.includeDirs, []);
        assert.deepEqual(options.defines, ['OK']);
        assert.equal(options.loops, null);
        assert.equal(options.thresholds.energyHotspotShare, 0.2);
        assert.equal(options.thresholds.bankConflictWays, 2);
        assert.equal(options.analyzeOnChange, true);
        assert.equal(options.timeoutSeconds, 120);
        assert.equal(options.compileMemoryMB, null);
        for (const key of ['gpu', 'nvccPath', 'includeDirs', 'defines', 'loops', 'energyHotspotShare', 'bankConflictWays', 'analyzeOnChange', 'timeoutSeconds', 'compileMemoryMB', 'timeModel', 'powerModel']) {
            assert.ok(
                problems.some((p) => p.includes(key)),
                `no problem reported for ${key}: ${problems.join('; ')}`,
            );
        }
    });

    it('treats an empty nvcc path and null values as unset', () => {
        const { options, problems } = buildInitializationOptions(
            reader({ nvccPath: '', loops: null, gpu: null, includeDirs: null, compileMemoryMB: null }),
        );
        assert.equal(options.nvccPath, null);
        assert.equal(options.compileMemoryMB, null);
        assert.equal(options.loops, null);
        assert.equal(options.gpu, 'v100');
        assert.deepEqual(options.includeDirs, []);
        assert.deepEqual(problems, []);
    });

    it('keeps a profile file path as a path and lower-cases profile ids', () => {
        const ctx = { workspaceFolder: '/ws', home: '/home/me' };
        assert.equal(buildInitializationOptions(reader({ gpu: 'RTX4090' }), ctx).options.gpu, 'rtx4090');
        assert.equal(buildInitializationOptions(reader({ gpu: '~/gpus/MyLab.toml' }), ctx).options.gpu, '/home/me/gpus/MyLab.toml');
        assert.equal(buildInitializationOptions(reader({ gpu: 'profiles/Lab.toml' }), ctx).options.gpu, path.join('/ws', 'profiles/Lab.toml'));
    });

    it('warns about an arch that nvcc would not accept but passes it on', () => {
        const { options, problems } = buildInitializationOptions(reader({ arch: 'volta' }));
        assert.equal(options.arch, 'volta');
        assert.equal(problems.length, 1);
        assert.match(problems[0], /kerncast\.arch/);
    });

    it('resolves path settings against the workspace folder', () => {
        const ws = path.resolve('/work/project');
        const { options } = buildInitializationOptions(
            reader({
                nvccPath: '${userHome}/cuda/bin/nvcc',
                includeDirs: ['include', '${workspaceFolder}/third_party', '~/inc', '/abs/dir'],
            }),
            { workspaceFolder: ws, home: '/home/me' },
        );
        assert.equal(options.nvccPath, '/home/me/cuda/bin/nvcc');
        assert.deepEqual(options.includeDirs, [
            path.join(ws, 'include'),
            `${ws}/third_party`,
            '/home/me/inc',
            '/abs/dir',
        ]);
    });

    it('does not share state with the frozen defaults', () => {
        const { options } = buildInitializationOptions(reader({}));
        options.includeDirs.push('x');
        options.thresholds.lowOccupancy = 0.9;
        assert.deepEqual(DEFAULT_OPTIONS.includeDirs, []);
        assert.equal(DEFAULT_OPTIONS.thresholds.lowOccupancy, 0.25);
    });
});

describe('normalizeLaunch', () => {
    it('keeps valid fields and drops invalid ones kernel by kernel', () => {
        const problems: string[] = [];
        const launch = normalizeLaunch(
            {
                good: { grid: 128, block: [32, 8, 1] },
                bad: { grid: [0], block: [1, 2, 3, 4], dynamicSharedBytes: -4, params: { n: 'big', m: 3, x: 0.5 }, extra: 1 },
                notObject: 5,
            },
            problems,
        );
        assert.deepEqual(launch, { good: { grid: 128, block: [32, 8, 1] }, bad: { params: { m: 3 } } });
        assert.equal(problems.length, 7);
    });

    it('ignores a launch setting that is not an object', () => {
        const problems: string[] = [];
        assert.deepEqual(normalizeLaunch([1, 2], problems), {});
        assert.equal(problems.length, 1);
    });
});

describe('variables', () => {
    it('expands workspaceFolder, userHome, env and ~', () => {
        const ctx = { workspaceFolder: '/ws', home: '/home/u', env: { CUDA_HOME: '/opt/cuda' } };
        assert.equal(expandVariables('${workspaceFolder}/a', ctx), '/ws/a');
        assert.equal(expandVariables('${userHome}/b', ctx), '/home/u/b');
        assert.equal(expandVariables('${env:CUDA_HOME}/bin/nvcc', ctx), '/opt/cuda/bin/nvcc');
        assert.equal(expandVariables('${env:MISSING}x', ctx), 'x');
        assert.equal(expandVariables('~/c', ctx), '/home/u/c');
        assert.equal(expandVariables('a~/c', ctx), 'a~/c');
        assert.equal(expandVariables('${unknown}', ctx), '${unknown}');
    });

    it('leaves relative paths alone without a workspace folder', () => {
        assert.equal(resolvePathSetting('include', {}), 'include');
        assert.equal(resolvePathSetting('C:\\cuda\\include', { workspaceFolder: '/ws' }), 'C:\\cuda\\include');
    });
});

describe('configuration change payload', () => {
    it('nests the options under settings.kerncast', () => {
        const { options } = buildInitializationOptions(reader({ gpu: 'h100' }));
        const params = didChangeConfigurationParams(options);
        assert.deepEqual(Object.keys(params), ['settings']);
        assert.equal(params.settings.kerncast.gpu, 'h100');
    });

    it('reads dotted keys out of a nested section', () => {
        const read = readerFromObject({ kerncast: { thresholds: { lowOccupancy: 0.1 } } });
        assert.equal(read('kerncast.thresholds.lowOccupancy'), 0.1);
        assert.deepEqual(read('kerncast.thresholds'), { lowOccupancy: 0.1 });
        assert.equal(read('kerncast.missing.deeper'), undefined);
    });
});
