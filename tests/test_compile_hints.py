"""Hints for APIs that older CUDA code uses and the current toolkit removed (analysis/data/compile_hints.toml).

The table's claims are checked against the real toolkit: every removed name it lists makes nvcc fail with the
message the hint is keyed on, and every replacement it names compiles.
"""

from __future__ import annotations

import re
import tomllib
from collections import Counter
from pathlib import Path

import pytest
from kerncast.analysis.compile import CompileOptions, compile_cuda
from kerncast.analysis.compile_hints import hint_for, legacy_header_text
from kerncast.analysis.options import AnalysisOptions
from kerncast.analysis.pipeline import analyze_file
from kerncast.analysis.report import FileReport
from kerncast.server import actions
from kerncast.server.convert import to_diagnostics
from lsprotocol import types as lsp
from test_fixes_apply import apply_edits

TABLE = tomllib.loads((Path(__file__).resolve().parent.parent / "analysis" / "data" / "compile_hints.toml")
                      .read_text(encoding="utf-8"))
THREAD = TABLE["thread_functions"]["use"]
PROPS = TABLE["device_properties"]["use"]
REFS = TABLE["references"]["use"]


def test_hints_name_the_replacement_and_the_release() -> None:
    assert hint_for('identifier "cudaThreadSynchronize" is undefined') == \
        "cudaThreadSynchronize was removed in CUDA 13; use cudaDeviceSynchronize()"
    clock = hint_for('class "cudaDeviceProp" has no member "clockRate"')
    assert clock is not None and "cudaDevAttrClockRate" in clock and "CUDA 13" in clock
    texture = hint_for("texture is not a template")
    assert texture is not None and "CUDA 12" in texture and "cudaTextureObject_t" in texture


def test_no_hint_for_other_errors() -> None:
    assert hint_for('identifier "fp" is undefined') is None  # a name the file itself should define
    assert hint_for('class "cudaDeviceProp" has no member "clockrate"') is None  # a typo, not a removal
    assert hint_for('class "Foo" has no member "clockRate"') is None
    assert hint_for("expected a \";\"") is None


def _legacy_source() -> str:
    """Every removed API the table lists, used the way old code used it."""
    calls = "\n".join(f"    {name}();" for name in THREAD)
    fields = "\n".join(f"    (void)prop.{name};" for name in PROPS)
    refs = "\n".join(f"{kind}<float, 1> legacy_{kind};" for kind in REFS)
    return f"{refs}\n\nint main()\n{{\n    cudaDeviceProp prop;\n{fields}\n{calls}\n    return 0;\n}}\n"


def test_each_removed_api_fails_with_its_hint(nvcc_available, tmp_path) -> None:
    path = tmp_path / "legacy.cu"
    path.write_text(_legacy_source())
    report = analyze_file(path, options=AnalysisOptions(lime=False))
    errors = [f.message for f in report.findings if f.severity == "error"]
    assert not report.ok
    for name, use in THREAD.items():
        assert any(m.startswith(f'identifier "{name}" is undefined — ') and use in m for m in errors), name
    for name, use in PROPS.items():
        assert any(f'no member "{name}" — cudaDeviceProp.{name} was removed' in m and use in m for m in errors), name
    for kind in REFS:
        assert any(m.startswith(f"{kind} is not a template — {kind} references were removed") for m in errors), kind


def _replacement_source() -> str:
    """A translation unit that names every replacement the table gives: functions, attributes, fields, types."""
    texts = [*THREAD.values(), *PROPS.values(), *REFS.values()]
    names = sorted({n for t in texts for n in re.findall(r"\bcuda[A-Z]\w*", t)})
    lines = [f"using T{i} = {n};" if n.endswith("_t") else f"using T{i} = decltype({n});" for i, n in enumerate(names)]
    fields = sorted({m for t in PROPS.values() for m in re.findall(r"the (\w+) field", t)})
    lines += [f"using F{i} = decltype(cudaDeviceProp::{f});" for i, f in enumerate(fields)]
    lines.append("__global__ void k(cudaTextureObject_t t, float *o) { o[0] = tex1Dfetch<float>(t, 0); }")
    return "\n".join(lines) + "\n"


def test_every_replacement_compiles(nvcc_available, tmp_path) -> None:
    path = tmp_path / "replacements.cu"
    path.write_text(_replacement_source())
    result = compile_cuda(path, options=CompileOptions(arch="sm_90"), with_resources=False)
    assert result.ok, [d.message for d in result.diagnostics]


def test_hint_for_an_error_in_an_included_file() -> None:
    hint = hint_for("in included file legacy.cuh, line 3: texture is not a template")
    assert hint is not None and hint.startswith("texture references were removed in CUDA 12")


def test_stand_ins_cover_every_removed_function_and_field() -> None:
    header = legacy_header_text()
    for name, use in THREAD.items():
        assert re.search(rf"^#define {name} {use.split('(')[0]}$", header, re.M), name
    for name in PROPS:
        assert re.search(rf"^    int {name};$", header, re.M), name


LEGACY_HEADER = """\
texture<float, 1, cudaReadModeElementType> weights;
"""

LEGACY_FILE = """\
#include "legacy.cuh"
texture<uchar4, 2, cudaReadModeNormalizedFloat> image;

__global__ void blend(float4 *out, float *scaled, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = tex2D(image, i % 64, i / 64);
        scaled[i] = tex1Dfetch(weights, i) * 2.0f;
    }
}

int main()
{
    cudaDeviceProp prop;
    cudaGetDeviceProperties(&prop, 0);
    int clock = prop.clockRate;
    float *w = 0;
    cudaBindTexture(0, weights, w, 1024 * sizeof(float));
    blend<<<4, 256>>>(0, 0, 1024);
    cudaThreadSynchronize();
    cudaUnbindTexture(weights);
    return clock > 0 ? 0 : 1;
}
"""


def test_a_file_whose_only_errors_are_removed_apis_is_analysed_with_stand_ins(nvcc_available, tmp_path) -> None:
    (tmp_path / "legacy.cuh").write_text(LEGACY_HEADER)
    path = tmp_path / "legacy.cu"
    path.write_text(LEGACY_FILE)
    report = analyze_file(path, options=AnalysisOptions(lime=False, gpu="h100"))
    assert report.ok, [f.message for f in report.findings if f.severity == "error"]
    assert [k.name for k in report.kernels] == ["blend"]
    kernel = report.kernels[0]
    assert kernel.time is not None and kernel.launch is not None and kernel.launch.grid.value == (4, 1, 1)
    warnings = {(f.line, f.message.split(" — ")[1].split(" removed")[0]) for f in report.findings
                if f.code == "compile-warning" and "Kerncast compiled it with a stand-in" in f.message}
    assert warnings == {(1, "texture references were"), (2, "texture references were"),
                        (17, "cudaDeviceProp.clockRate was"), (21, "cudaThreadSynchronize was")}, warnings
    note = next(n for n in report.notes if n.startswith("compiled with Kerncast's stand-ins"))
    assert "cudaThreadSynchronize" in note and "cudaDeviceProp.clockRate" in note and "texture references" in note
    result = compile_cuda(path, options=CompileOptions(arch="sm_90"), with_resources=False)
    assert result.ok and result.ptx is not None
    assert "tex.2d.v4.f32.f32" in result.ptx and "tex.1d.v4.f32.s32" in result.ptx  # the fetches stay fetches


def test_a_file_with_another_error_keeps_all_its_errors(nvcc_available, tmp_path) -> None:
    path = tmp_path / "broken.cu"
    path.write_text("__global__ void k(float *o) { o[0] = undefined_scale; }\n"
                    "int main() { cudaThreadSynchronize(); return 0; }\n")
    report = analyze_file(path, options=AnalysisOptions(lime=False))
    errors = {(f.line, f.message) for f in report.findings if f.severity == "error"}
    assert not report.ok and not report.kernels
    assert (1, 'identifier "undefined_scale" is undefined') in errors
    assert (2, 'identifier "cudaThreadSynchronize" is undefined — cudaThreadSynchronize was removed in CUDA 13; '
               'use cudaDeviceSynchronize()') in errors
    assert not any(n.startswith("compiled with Kerncast's stand-ins") for n in report.notes)


def _removed_uses(report: FileReport) -> Counter[str]:
    """The compile findings on removed APIs, by what the hint names (lines move when code changes)."""
    return Counter(f.message.split(" — ")[1].split(" removed")[0] for f in report.findings
                   if str(f.code).startswith("compile-") and " — " in f.message)


def test_the_rename_of_a_removed_function_keeps_its_promise(nvcc_available, tmp_path) -> None:
    (tmp_path / "legacy.cuh").write_text(LEGACY_HEADER)
    path = tmp_path / "legacy.cu"
    path.write_text(LEGACY_FILE)
    options = AnalysisOptions(lime=False, gpu="h100")
    before = analyze_file(path, options=options)
    doc = actions.Doc(uri=path.as_uri(), version=1, lines=LEGACY_FILE.splitlines(), versioned=False)
    whole = lsp.Range(lsp.Position(0, 0), lsp.Position(len(doc.lines), 0))
    offered = [(f, a) for f in before.findings
               for one in [FileReport(before.file, before.gpu, findings=[f])]
               for a in actions.code_actions(one, doc, whole, to_diagnostics(one, doc.uri, doc.lines), [], "h100")
               if a.edit is not None]
    # the fields and texture references have no one-line replacement: only the rename is offered
    assert [(f.line, a.title, a.kind, a.is_preferred) for f, a in offered] == [
        (21, "Kerncast: Use cudaDeviceSynchronize (it takes the same arguments)", lsp.CodeActionKind.QuickFix, True)]
    fixed = tmp_path / "fixed" / "legacy.cu"
    fixed.parent.mkdir()
    (fixed.parent / "legacy.cuh").write_text(LEGACY_HEADER)
    fixed.write_text(apply_edits(LEGACY_FILE, offered[0][1].edit.changes[path.as_uri()]))
    assert "    cudaDeviceSynchronize();\n" in fixed.read_text()
    after = analyze_file(fixed, options=options)
    assert after.ok
    expected = _removed_uses(before)
    expected["cudaThreadSynchronize was"] -= 1
    assert _removed_uses(after) == +expected  # the warning is gone and no other finding came or went
    assert Counter(str(f.code) for f in after.findings) == \
        Counter(str(f.code) for f in before.findings) - Counter(["compile-warning"])
    assert [(k.name, k.time is not None) for k in after.kernels] == [("blend", True)]


def test_no_rename_where_the_name_is_not_in_the_line(nvcc_available, tmp_path) -> None:
    path = tmp_path / "wrapped.cu"
    path.write_text("#define SYNC() cudaThreadSynchronize()\n__global__ void k(float *o) { o[0] = 1.0f; }\n"
                    "int main() { k<<<1, 32>>>(0); SYNC(); return 0; }\n")
    report = analyze_file(path, options=AnalysisOptions(lime=False))
    assert report.ok
    uses = [f for f in report.findings if "cudaThreadSynchronize was removed" in f.message]
    assert uses and all(f.fix is None for f in uses)  # nvcc points at the macro's use, not at the name


LIBRARIES = TABLE["library_headers"]


def test_a_missing_library_header_names_the_wheel_that_has_it() -> None:
    hint = hint_for("curand_kernel.h: No such file or directory")
    assert hint == ("curand_kernel.h is a cuRAND header, which the nvcc wheel does not ship: pip install "
                    "nvidia-curand beside Kerncast (nvcc then finds it), or add your CUDA toolkit's include folder "
                    "to the includeDirs setting (-I)")
    nested = hint_for("in included file MonteCarloPi.h, line 34: curand.h: No such file or directory")
    assert nested is not None and "pip install nvidia-curand " in nested
    for entry in LIBRARIES.values():
        for prefix in entry["prefixes"]:
            found = hint_for(f"{prefix}_example.h: No such file or directory")
            assert found is not None and f"a {entry['library']} header" in found and entry["wheel"] in found
    assert hint_for("helper_cuda.h: No such file or directory") is None  # the project's own header
    assert hint_for("GLFW/glfw3.h: No such file or directory") is None  # not a CUDA library


def test_nvcc_reports_a_library_header_with_its_hint(nvcc_available, tmp_path) -> None:
    path = tmp_path / "fft.cu"
    path.write_text("#include <cufftXt.h>\n__global__ void k(float *o) { o[0] = 1.0f; }\n")
    report = analyze_file(path, options=AnalysisOptions(lime=False))
    if report.ok:
        pytest.skip("cuFFT's headers are installed here, so nvcc finds cufftXt.h and there is no error to hint")
    errors = [f.message for f in report.findings if f.severity == "error"]
    assert errors == ["cufftXt.h: No such file or directory — cufftXt.h is a cuFFT header, which the nvcc wheel "
                      "does not ship: pip install nvidia-cufft beside Kerncast (nvcc then finds it), or add your "
                      "CUDA toolkit's include folder to the includeDirs setting (-I)"], errors
