"""Library names used without their header (analysis/data/compile_hints.toml, table `missing_includes`).

Code that used `thrust::make_tuple` or `std::cout` while another header brought theirs in fails once newer
headers include less. The table's claims are checked against the real toolkit (every header declares the
names it lists); a file whose only errors are such names is analysed with the headers included first; and the
quick fix that adds the `#include` keeps its promise after recompiling.
"""

from __future__ import annotations

import tomllib
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from kerncast.analysis.compile import CompileOptions, compile_cuda
from kerncast.analysis.compile_hints import hint_for, include_fix, missing_include
from kerncast.analysis.options import AnalysisOptions
from kerncast.analysis.pipeline import analyze_file
from kerncast.analysis.report import FileReport
from kerncast.analysis.rules import Code
from kerncast.server import actions
from kerncast.server.convert import to_diagnostics
from lsprotocol import types as lsp
from test_fixes_apply import apply_edits

TABLE = tomllib.loads((Path(__file__).resolve().parent.parent / "analysis" / "data" / "compile_hints.toml")
                      .read_text(encoding="utf-8"))["missing_includes"]
HEADERS: dict[str, list[str]] = TABLE["headers"]
NAMESPACES = set(TABLE["namespaces"])


def test_each_name_is_listed_under_one_header() -> None:
    names = Counter(name for names in HEADERS.values() for name in names)
    assert [n for n, count in names.items() if count > 1] == []
    assert NAMESPACES.issubset(names)


def _uses(names: list[str]) -> str:
    """A using-declaration of each name (a namespace alias for a namespace): valid only where it is declared."""
    return "\n".join(f"namespace kerncast_alias_{i} = {n};" if n in NAMESPACES else f"using {n};"
                     for i, n in enumerate(names))


def test_every_header_declares_the_names_it_lists(nvcc_available, tmp_path) -> None:
    def compiles_alone(item: tuple[str, list[str]]) -> tuple[str, list[str]]:
        header, names = item
        path = tmp_path / (header.replace("/", "_").replace(".", "_") + ".cu")
        path.write_text(f"#include <{header}>\n{_uses(names)}\n")
        result = compile_cuda(path, options=CompileOptions(arch="sm_90"), with_resources=False)
        return header, [] if result.ok else [d.message for d in result.diagnostics if d.severity == "error"]

    with ThreadPoolExecutor(2) as pool:  # one nvcc run per header: about a minute in sequence
        failed = [(h, errors) for h, errors in pool.map(compiles_alone, HEADERS.items()) if errors]
    assert failed == []


def test_the_hint_names_the_header() -> None:
    assert hint_for('namespace "thrust" has no member "make_tuple"') == (
        "thrust::make_tuple is declared in <thrust/tuple.h>, which this file does not include (nor does any header "
        "it includes): add #include <thrust/tuple.h>")
    nested = hint_for('in included file kernels.cuh, line 4: namespace "std" has no member "cout"')
    assert nested is not None and nested.endswith("add #include <iostream>")
    cg = missing_include('namespace "cooperative_groups" has no member "reduce"')
    assert cg is not None and cg.header == "cooperative_groups/reduce.h"


def test_no_header_for_other_names_or_where_the_file_includes_it() -> None:
    assert hint_for('namespace "std" has no member "vectr"') is None  # a typo, not a missing header
    assert hint_for('namespace "mylib" has no member "cout"') is None
    source = "#include <thrust/tuple.h>\n"
    assert hint_for('namespace "thrust" has no member "make_tuple"', source) is None
    assert include_fix(Code.COMPILE_ERROR, 'namespace "thrust" has no member "make_tuple"', source) is None
    assert include_fix(Code.COMPILE_ERROR, 'namespace "thrust" has no member "make_tuple"', None) is None


def _inserted(source: str) -> str:
    """The source after the fix for a missing <iostream>, applied as the editor applies it."""
    fix = include_fix(Code.COMPILE_ERROR, 'namespace "std" has no member "cout"', source)
    assert fix is not None and len(fix.edits) == 1
    e = fix.edits[0]
    edit = lsp.TextEdit(lsp.Range(lsp.Position(e.line - 1, e.column - 1), lsp.Position(e.end_line - 1,
                                                                                        e.end_column - 1)), e.new_text)
    return apply_edits(source, [edit])


def test_the_include_goes_after_the_last_include_outside_any_if() -> None:
    source = ("// header comment\n#include <cstdio>\n#ifdef USE_GL\n#include <GL/gl.h>\n#endif\n"
              "#include \"kernels.cuh\"\n\nint main() { return 0; }\n")
    assert _inserted(source) == source.replace('"kernels.cuh"\n', '"kernels.cuh"\n#include <iostream>\n')
    guarded = "#ifndef KERNELS_CUH\n#define KERNELS_CUH\n#include <cstdio>\nvoid f();\n#endif\n"
    assert _inserted(guarded) == guarded.replace("<cstdio>\n", "<cstdio>\n#include <iostream>\n")
    assert _inserted("int main() { return 0; }\n") == "#include <iostream>\nint main() { return 0; }\n"
    assert _inserted("int x;\n#include <cstdio>") == "int x;\n#include <cstdio>\n#include <iostream>"



def test_the_include_goes_above_a_project_header_that_uses_the_library_header(tmp_path: Path) -> None:
    """A header beside the file that uses `thrust::get` relies on its includer for <thrust/tuple.h>: the line
    goes above that header's #include. One that uses nothing of it, or is not there, changes nothing."""
    source = ('#include <thrust/sort.h>\n#include "plain.cuh"\n#include "uses_get.cuh"\n#include "absent.cuh"\n'
              "void f() { auto t = thrust::make_tuple(1, 2); }\n")
    (tmp_path / "plain.cuh").write_text("inline int twice(int x) { return 2 * x; }\n")
    (tmp_path / "uses_get.cuh").write_text("template <class T> int first(T t) { return thrust :: get<0>(t); }\n")
    message = 'namespace "thrust" has no member "make_tuple"'
    fix = include_fix(Code.COMPILE_ERROR, message, source, tmp_path)
    assert fix is not None and [(e.line, e.column, e.new_text) for e in fix.edits] == [
        (3, 1, "#include <thrust/tuple.h>\n")]
    (tmp_path / "uses_get.cuh").write_text("int nothing;\n")
    fix = include_fix(Code.COMPILE_ERROR, message, source, tmp_path)
    assert fix is not None and [(e.line, e.column) for e in fix.edits] == [(5, 1)]  # after the last #include

MISSING = """\
#include <cstdio>
#include <thrust/device_vector.h>
#include <thrust/iterator/zip_iterator.h>

__global__ void scale(float *out, const float *in, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = 2.0f * in[i];
}

int main()
{
    thrust::device_vector<float> a(1024), b(1024);
    auto first = thrust::make_zip_iterator(thrust::make_tuple(a.begin(), b.begin()));
    scale<<<4, 256>>>(thrust::raw_pointer_cast(b.data()), thrust::raw_pointer_cast(a.data()), 1024);
    std::cout << "done" << std::endl;
    return first == first ? 0 : 1;
}
"""


def _compile_findings(report: FileReport) -> Counter[tuple[str, str]]:
    """The compile findings by code and the header their hint names (lines move when a fix adds one)."""
    return Counter((str(f.code), f.message.split(" — ")[1].split(">")[0]) for f in report.findings
                   if str(f.code).startswith("compile-") and " — " in f.message)


def test_a_file_missing_only_headers_is_analysed_with_them_included(nvcc_available, tmp_path) -> None:
    path = tmp_path / "missing.cu"
    path.write_text(MISSING)
    report = analyze_file(path, options=AnalysisOptions(lime=False, gpu="h100"))
    assert report.ok, [f.message for f in report.findings if f.severity == "error"]
    assert [(k.name, k.time is not None) for k in report.kernels if k.name == "scale"] == [("scale", True)]
    warnings = {(f.line, f.message) for f in report.findings if f.code == "compile-warning"}
    assert warnings == {
        (14, 'namespace "thrust" has no member "make_tuple" — thrust::make_tuple is declared in <thrust/tuple.h>, '
             "which this file does not include (nor does any header it includes): add #include <thrust/tuple.h> "
             "(Kerncast compiled the file with <thrust/tuple.h> included)"),
        (16, 'namespace "std" has no member "cout" — std::cout is declared in <iostream>, which this file does not '
             "include (nor does any header it includes): add #include <iostream> (Kerncast compiled the file with "
             "<iostream> included)")}
    assert "compiled with <iostream>, <thrust/tuple.h> included before the file, which uses names they declare " \
           "without including them; the warnings say where each is declared" in report.notes


CUDA_STD = """\
#include <cuda/std/cstdint>

__global__ void pairs(int *out)
{
    cuda::std::tuple<int, int> t = cuda::std::make_tuple(1, 2);
    cuda::std::pair<int, int> p = cuda::std::make_pair(3, 4);
    out[threadIdx.x] = cuda::std::get<0>(t) + p.second + cuda::std::numeric_limits<short>::max();
}
"""


def test_tuples_and_pairs_of_cuda_std_name_their_headers(nvcc_available, tmp_path) -> None:
    """libcu++'s tuples, pairs and limits (cuda::std::) without their header, as Thrust's are: each error names
    it, and the file is analysed with the headers included first."""
    path = tmp_path / "tuples.cu"
    path.write_text(CUDA_STD)
    report = analyze_file(path, options=AnalysisOptions(lime=False, gpu="h100"))
    assert report.ok, [f.message for f in report.findings if f.severity == "error"]
    assert [k.name for k in report.kernels] == ["pairs"]
    named = {(f.message.split(" has no member ")[1].split('"')[1], f.message.split("add #include ")[1].split(" ")[0])
             for f in report.findings if f.code == "compile-warning"}
    assert named == {("tuple", "<cuda/std/tuple>"), ("make_tuple", "<cuda/std/tuple>"), ("get", "<cuda/std/tuple>"),
                     ("pair", "<cuda/std/utility>"), ("make_pair", "<cuda/std/utility>"),
                     ("numeric_limits", "<cuda/std/limits>")}


NOT_A_NAMESPACE = 'name followed by "::" must be a class or namespace name'


def test_a_library_namespace_that_nothing_declared_is_read_at_the_errors_column() -> None:
    """With no header of the library included at all, nvcc does not name the member: the name is read where the
    error points, the longest listed prefix of the qualified name written there."""
    source = ("__global__ void k(int *out)\n{\n    thrust :: tuple<int, int> t(1, 2);\n"
              "    auto f = thrust::placeholders::_1 + 1;\n    mylib::tuple<int> u;\n}\n")
    assert hint_for(NOT_A_NAMESPACE, source, at=(3, 5)) == (
        "thrust::tuple is declared in <thrust/tuple.h>, which this file does not include (nor does any header "
        "it includes): add #include <thrust/tuple.h>")
    found = missing_include(NOT_A_NAMESPACE, source, (4, 14))
    assert found is not None and (found.symbol, found.header) == ("thrust::placeholders", "thrust/functional.h")
    assert missing_include(NOT_A_NAMESPACE, source, (5, 5)) is None  # not a listed library
    assert missing_include(NOT_A_NAMESPACE, source, (3, 9)) is None  # the column is not the name's
    assert missing_include(NOT_A_NAMESPACE, source) is None  # no position: nothing to read
    assert missing_include(NOT_A_NAMESPACE, "#include <thrust/tuple.h>\n" + source, (4, 5)) is None


def test_a_file_that_includes_no_header_of_the_library_is_analysed_with_it(nvcc_available, tmp_path) -> None:
    path = tmp_path / "bare.cu"
    path.write_text(CUDA_STD.replace("#include <cuda/std/cstdint>\n", "")
                    .replace("    out[threadIdx.x]", "    thrust::tuple<int, int> u(5, 6);\n    out[threadIdx.x]")
                    .replace("p.second +", "p.second + thrust::get<1>(u) +"))
    report = analyze_file(path, options=AnalysisOptions(lime=False, gpu="h100"))
    assert report.ok, [f.message for f in report.findings if f.severity == "error"]
    assert [k.name for k in report.kernels] == ["pairs"]
    headers = {f.message.split("add #include ")[1].split(" ")[0] for f in report.findings
               if f.code == "compile-warning" and f.message.startswith(NOT_A_NAMESPACE)}
    assert headers == {"<cuda/std/tuple>", "<cuda/std/utility>", "<thrust/tuple.h>"}  # one error per line
    fixes = {f.fix.edits[0].new_text for f in report.findings if f.fix is not None}
    assert "#include <thrust/tuple.h>\n" in fixes


def test_a_file_with_another_error_keeps_its_errors_and_their_hints(nvcc_available, tmp_path) -> None:
    path = tmp_path / "broken.cu"
    path.write_text(MISSING.replace("2.0f * in[i]", "undefined_scale * in[i]"))
    report = analyze_file(path, options=AnalysisOptions(lime=False))
    errors = {(f.line, f.message.split(" — ")[0], f.fix is not None) for f in report.findings
              if f.severity == "error"}
    assert not report.ok and not report.kernels
    assert errors == {(8, 'identifier "undefined_scale" is undefined', False),
                      (14, 'namespace "thrust" has no member "make_tuple"', True),
                      (16, 'namespace "std" has no member "cout"', True)}
    assert not any(n.startswith("compiled with <") for n in report.notes)


def test_adding_each_include_keeps_its_promise(nvcc_available, tmp_path) -> None:
    options = AnalysisOptions(lime=False, gpu="h100")
    text, findings, last_include = MISSING, None, "#include <thrust/iterator/zip_iterator.h>"
    for step, (header, name) in enumerate((("thrust/tuple.h", "thrust::make_tuple"), ("iostream", "std::cout"))):
        path = tmp_path / f"step{step}" / "missing.cu"
        path.parent.mkdir()
        path.write_text(text)
        before = analyze_file(path, options=options)
        doc = actions.Doc(uri=path.as_uri(), version=1, lines=text.splitlines(), versioned=False)
        whole = lsp.Range(lsp.Position(0, 0), lsp.Position(len(doc.lines), 0))
        offered = [a for f in before.findings
                   for one in [FileReport(before.file, before.gpu, findings=[f])]
                   for a in actions.code_actions(one, doc, whole, to_diagnostics(one, doc.uri, doc.lines), [],
                                                 "h100") if a.edit is not None]
        titles = sorted({(a.title, a.kind, a.is_preferred) for a in offered})
        assert (f"Kerncast: Add #include <{header}>", lsp.CodeActionKind.QuickFix, True) in titles, titles
        action = next(a for a in offered if a.title == f"Kerncast: Add #include <{header}>")
        text = apply_edits(text, action.edit.changes[path.as_uri()])
        assert f"{last_include}\n#include <{header}>\n" in text  # after the last include
        last_include = f"#include <{header}>"
        fixed = tmp_path / f"fixed{step}" / "missing.cu"
        fixed.parent.mkdir()
        fixed.write_text(text)
        after = analyze_file(fixed, options=options)
        assert after.ok
        expected = _compile_findings(before)
        del expected[("compile-warning", f"{name} is declared in <{header}")]
        assert _compile_findings(after) == expected  # its warning is gone and no other compile finding changed
        others = Counter(str(f.code) for f in after.findings if not str(f.code).startswith("compile-"))
        assert others == Counter(str(f.code) for f in before.findings if not str(f.code).startswith("compile-"))
        findings = after.findings
    assert findings is not None and not any(str(f.code).startswith("compile-") for f in findings)
    assert not any(n.startswith("compiled with <") for n in after.notes)



def test_an_unqualified_name_is_looked_up_in_the_namespaces_the_file_uses() -> None:
    source = "#include <cstdio>\nusing namespace std;\n"
    assert hint_for('identifier "cout" is undefined', source) == (
        "std::cout is declared in <iostream>, which this file does not include (nor does any header it includes): "
        "add #include <iostream>")
    assert hint_for('identifier "cout" is undefined', "#include <cstdio>\n") is None  # no using-directive
    assert hint_for('identifier "cout" is undefined') is None  # the text is not known
    assert hint_for('identifier "fp" is undefined', source) is None  # not a name of the library


UNQUALIFIED = """\
#include <cstdio>
using namespace std;

__global__ void fill(float *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = 1.0f;
}

int main()
{
    vector<float> host(1024);
    fill<<<4, 256>>>(0, 1024);
    cout << host.size() << endl;
    return 0;
}
"""


def test_unqualified_names_compile_with_their_headers_and_the_fix_keeps_its_promise(nvcc_available,
                                                                                      tmp_path) -> None:
    path = tmp_path / "before" / "unqualified.cu"
    path.parent.mkdir()
    path.write_text(UNQUALIFIED)
    options = AnalysisOptions(lime=False, gpu="h100")
    before = analyze_file(path, options=options)
    assert before.ok and [k.name for k in before.kernels] == ["fill"]
    assert _compile_findings(before) == Counter({("compile-warning", "std::vector is declared in <vector"): 1,
                                                 ("compile-warning", "std::cout is declared in <iostream"): 1,
                                                 ("compile-warning", "std::endl is declared in <iostream"): 1})
    doc = actions.Doc(uri=path.as_uri(), version=1, lines=UNQUALIFIED.splitlines(), versioned=False)
    whole = lsp.Range(lsp.Position(0, 0), lsp.Position(len(doc.lines), 0))
    text = UNQUALIFIED
    for title in ("Kerncast: Add #include <vector>", "Kerncast: Add #include <iostream>"):
        action = next(a for f in before.findings
                      for one in [FileReport(before.file, before.gpu, findings=[f])]
                      for a in actions.code_actions(one, doc, whole, to_diagnostics(one, doc.uri, doc.lines), [],
                                                    "h100") if a.title == title)
        text = apply_edits(text, action.edit.changes[path.as_uri()])  # both insert after line 1
    assert text.startswith("#include <cstdio>\n#include <")
    fixed = tmp_path / "after" / "unqualified.cu"
    fixed.parent.mkdir()
    fixed.write_text(text)
    after = analyze_file(fixed, options=options)
    assert after.ok and not _compile_findings(after)
    assert Counter(str(f.code) for f in after.findings) == \
        Counter(str(f.code) for f in before.findings if not str(f.code).startswith("compile-"))
