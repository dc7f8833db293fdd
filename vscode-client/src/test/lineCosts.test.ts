import * as assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { afterText, BANDS, bandColor, bandOf, byBand, parseLineCosts } from '../lineCosts';

describe('parseLineCosts', () => {
    it('keeps the checked lines of the server answer', () => {
        const answer = {
            version: 3,
            lines: [
                { line: 4, share: 0.42, uj: 12, kernel: 'k', label: "42% of k's energy (12 µJ)" },
                { line: 9, share: 0.02, label: 7 },
            ],
        };
        assert.deepEqual(parseLineCosts(answer, 20), [
            { line: 4, share: 0.42, label: "42% of k's energy (12 µJ)" },
            { line: 9, share: 0.02, label: '2%' },
        ]);
    });

    it('leaves out what is malformed, below 1% or outside the document', () => {
        const answer = {
            lines: [
                { line: 25, share: 0.5 },
                { line: -1, share: 0.5 },
                { line: 2.5, share: 0.5 },
                { line: 3, share: 0.005 },
                { line: 3, share: 1.5 },
                { line: 3, share: '0.5' },
                null,
                'x',
            ],
        };
        assert.deepEqual(parseLineCosts(answer, 20), []);
        assert.deepEqual(parseLineCosts(null, 20), []);
        assert.deepEqual(parseLineCosts({ lines: 'x' }, 20), []);
    });
});

describe('bands', () => {
    it('grow with the share', () => {
        assert.deepEqual([0.01, 0.049, 0.05, 0.2, 0.35, 0.9].map(bandOf), [0, 0, 1, 2, 3, 4]);
        const alphas = BANDS.map((_, b) => Number(/([\d.]+)\)$/.exec(bandColor(b))?.[1]));
        assert.deepEqual([...alphas].sort((a, b) => a - b), alphas);
        assert.equal(new Set(alphas).size, BANDS.length);
    });

    it('sort the lines into one list per band, with their text', () => {
        const costs = [
            { line: 1, share: 0.6, label: 'a' },
            { line: 2, share: 0.02, label: 'b' },
        ];
        const bands = byBand(costs);
        assert.equal(bands.length, BANDS.length);
        assert.deepEqual(bands[4], [costs[0]]);
        assert.deepEqual(bands[0], [costs[1]]);
        assert.equal(afterText(costs[0]), '  a');
    });
});
