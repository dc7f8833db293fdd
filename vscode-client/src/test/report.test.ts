import * as assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { reportArguments, reportDocumentPath, reportKernelName, reportMarkdown, uriString } from '../report';

const active = { uri: 'file:///ws/matmul.cu', position: { line: 12, character: 4 } };

/** Stands in for a vscode.Uri: an object with a scheme whose toString gives the URI. */
class FakeUri {
    readonly scheme = 'file';
    constructor(private readonly text: string) {}
    toString(): string {
        return this.text;
    }
}

describe('reportArguments', () => {
    it('passes a code lens call [uri, kernelName] through', () => {
        assert.deepEqual(reportArguments(['file:///ws/a.cu', 'saxpy'], active), ['file:///ws/a.cu', 'saxpy']);
        assert.deepEqual(reportArguments(['file:///ws/a.cu', 'saxpy'], undefined), ['file:///ws/a.cu', 'saxpy']);
    });

    it('passes [uri, position] through', () => {
        assert.deepEqual(reportArguments(['file:///ws/a.ptx', { line: 3, character: 0 }], undefined), [
            'file:///ws/a.ptx',
            { line: 3, character: 0 },
        ]);
    });

    it('uses the cursor of the active editor from the palette', () => {
        assert.deepEqual(reportArguments([], active), ['file:///ws/matmul.cu', { line: 12, character: 4 }]);
    });

    it('uses the cursor when the context menu passes the same document', () => {
        assert.deepEqual(reportArguments([new FakeUri('file:///ws/matmul.cu'), { groupId: 1 }], active), [
            'file:///ws/matmul.cu',
            { line: 12, character: 4 },
        ]);
    });

    it('has nothing to ask without a kernel name or an editor', () => {
        assert.equal(reportArguments([], undefined), undefined);
        assert.equal(reportArguments([new FakeUri('file:///ws/other.cu')], active), undefined);
        assert.equal(reportArguments(['file:///ws/a.cu', ''], undefined), undefined);
    });

    it('converts URI objects to strings', () => {
        assert.equal(uriString(new FakeUri('file:///x.cu')), 'file:///x.cu');
        assert.equal(uriString({ scheme: 'file' }), undefined);
        assert.equal(uriString(3), undefined);
    });
});

describe('report result', () => {
    it('reads {markdown}', () => {
        assert.equal(reportMarkdown({ markdown: '# saxpy\n' }), '# saxpy\n');
        assert.equal(reportMarkdown('# plain string'), '# plain string');
        assert.equal(reportMarkdown({ markdown: '  ' }), undefined);
        assert.equal(reportMarkdown(null), undefined);
        assert.equal(reportMarkdown({}), undefined);
    });

    it('names the kernel from the argument or the first heading', () => {
        assert.equal(reportKernelName('saxpy', '# other'), 'saxpy');
        assert.equal(reportKernelName({ line: 0, character: 0 }, 'intro\n## Kernel `matmul_tiled` on V100\n'), 'matmul_tiled');
        assert.equal(reportKernelName({ line: 0, character: 0 }, '# Report\n'), 'Report');
        assert.equal(reportKernelName({ line: 0, character: 0 }, 'no heading'), 'kernel');
    });

    it('gives one stable markdown path per file and kernel', () => {
        assert.equal(reportDocumentPath('file:///ws/src/mat%20mul.cu', 'matmul'), '/mat_mul.cu/matmul.md');
        assert.equal(reportDocumentPath('file:///ws/a.ptx?x=1', '_Z5saxpyifPfS_'), '/a.ptx/_Z5saxpyifPfS_.md');
        assert.equal(reportDocumentPath('untitled:Untitled-1', 'k'), '/untitled_Untitled-1/k.md');
    });
});
