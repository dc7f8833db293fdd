import * as assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { gpuLabel, gpuPickItems, KNOWN_GPU_IDS, parseGpuList, statusBarText } from '../gpus';

describe('GPU labels', () => {
    it('shows the shipped profiles by their short names', () => {
        assert.equal(statusBarText('v100'), '$(pulse) Kerncast: V100');
        assert.equal(gpuLabel('rtx4090'), 'RTX 4090');
        assert.equal(gpuLabel('GTX1050'), 'GTX 1050');
        assert.equal(gpuLabel('my_lab_gpu'), 'MY_LAB_GPU');
        assert.equal(gpuLabel('/home/me/gpus/MyLab.toml'), 'MyLab');
        assert.equal(gpuLabel('C:\\gpus\\Lab.TOML'), 'Lab');
        assert.deepEqual(KNOWN_GPU_IDS, ['k20', 'k4200', 'm60', 'gtx1050', 'v100', 't4', 'a100', 'l4', 'rtx4090', 'h100']);
    });
});

describe('parseGpuList', () => {
    it('reads the server list', () => {
        const gpus = parseGpuList([
            { id: 'v100', name: 'Tesla V100-SXM2-16GB', calibrated: true },
            { id: 'h100', name: 'H100 SXM', calibrated: false },
        ]);
        assert.deepEqual(gpus, [
            { id: 'v100', name: 'Tesla V100-SXM2-16GB', calibrated: true },
            { id: 'h100', name: 'H100 SXM', calibrated: false },
        ]);
    });

    it('tolerates missing fields and drops unusable entries', () => {
        const gpus = parseGpuList([{ id: 't4' }, { name: 'no id' }, null, 'a100', { id: 't4', name: 'dup' }, { id: ' ' }]);
        assert.deepEqual(gpus, [{ id: 't4', name: 't4', calibrated: false }]);
    });

    it('throws on a result that is not a list', () => {
        assert.throws(() => parseGpuList(null), /returned null/);
        assert.throws(() => parseGpuList({ gpus: [] }), /returned an object/);
    });
});

describe('gpuPickItems', () => {
    const gpus = [
        { id: 'k20', name: 'Tesla K20', calibrated: true },
        { id: 'v100', name: 'Tesla V100', calibrated: true },
        { id: 'h100', name: 'H100', calibrated: false },
    ];

    it('puts the active GPU first and marks it', () => {
        const items = gpuPickItems(gpus, 'V100');
        assert.deepEqual(
            items.map((i) => i.gpuId),
            ['v100', 'k20', 'h100'],
        );
        assert.equal(items[0].picked, true);
        assert.match(items[0].label, /^\$\(check\) Tesla V100$/);
        assert.match(items[0].description, /active/);
        assert.match(items[1].detail, /^Calibrated/);
        assert.match(items[2].detail, /^Not calibrated/);
    });

    it('keeps the server order when the active GPU is not listed', () => {
        const items = gpuPickItems(gpus, 'a100');
        assert.deepEqual(
            items.map((i) => i.gpuId),
            ['k20', 'v100', 'h100'],
        );
        assert.ok(items.every((i) => !i.picked));
    });
});
