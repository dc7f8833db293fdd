"""Launch sizes written inside a host function take their values from the function's callers in the file.

`void run(int n) { k<<<(n + 255) / 256, 256>>>(...); }` called as `run(1 << 20)` is the most common way real
code launches a kernel; each value used says which call it came from, and what cannot be known stays unknown
with the reason (no call, calls that disagree, a parameter the function changes, a branch that does not run).
"""

from __future__ import annotations

import os

from kerncast.analysis.cexpr import ConstEnv
from kerncast.analysis.launch import find_launch_sites, infer_launch
from kerncast.analysis.options import AnalysisOptions
from kerncast.analysis.pipeline import analyze_file
from kerncast.server.render_text import render_file_report

KERNEL = "__global__ void k(float *y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = 0; }\n"


def _launch(host: str):
    return infer_launch("k", KERNEL + host)


def test_a_wrapper_called_once_gives_its_argument_to_the_launch_and_says_so():
    launch = _launch("void run(float *y, int n)\n{\n    const int threads = 128;\n"
                     "    k<<<(n + threads - 1) / threads, threads>>>(y, n);\n}\n"
                     "int main() { float *y; run(y, 1 << 20); return 0; }\n")
    assert launch.grid.value == (8192, 1, 1) and launch.grid.source == "launch-site"
    assert launch.params["n"].value == 1 << 20
    (caveat,) = [a for a in launch.assumptions if "from the call" in a]
    assert "n = 1048576 from the call at line 7 of run()" in caveat
    assert "a call elsewhere could pass other values" in caveat


def test_calls_that_agree_are_used_and_calls_that_disagree_are_not():
    body = "void run(int n) { k<<<n / 256, 256>>>(0, n); }\n"
    agree = _launch(body + "int main()\n{\n    run(4096);\n    run(4096);\n}\n")
    assert agree.grid.value == (16, 1, 1)
    assert any("n = 4096 from the 2 calls at line 5, line 6 of run()" in a for a in agree.assumptions)
    differ = _launch(body + "int main()\n{\n    run(4096);\n    run(8192);\n}\n")
    assert differ.grid.source == "default"
    assert any("called with different values (4096 at line 5, 8192 at line 6)" in a for a in differ.assumptions)


def test_a_parameter_without_a_call_or_changed_in_the_body_stays_unknown():
    uncalled = _launch("void run(int n) { k<<<n / 256, 256>>>(0, n); }\n")
    assert uncalled.grid.source == "default"
    assert any("'n' is a parameter of run(), which is not called in this file" in a for a in uncalled.assumptions)
    changed = _launch("void run(int n) { n *= 2; k<<<n / 256, 256>>>(0, n); }\nint main() { run(4096); }\n")
    assert changed.grid.source == "default"
    assert any("is changed at line 2" in a for a in changed.assumptions), changed.assumptions


def test_default_arguments_dim3_references_and_nested_callers():
    launch = _launch("void inner(const dim3 &grid, int threads = 64) { k<<<grid, threads>>>(0, 1); }\n"
                     "void outer(int rows) { inner(dim3(rows, 2)); }\n"
                     "int main() { outer(3); return 0; }\n")
    assert launch.grid.value == (3, 2, 1)
    assert launch.block.value == (64, 1, 1)
    (caveat,) = [a for a in launch.assumptions if "from the call" in a]
    assert "rows = 3 from the call at line 4 of outer()" in caveat


def test_a_parameter_shadows_a_file_constant_of_the_same_name():
    launch = _launch("const int n = 256;\nvoid run(int n) { k<<<n, 32>>>(0, n); }\nint main() { run(7); }\n")
    assert launch.grid.value == (7, 1, 1)


def test_a_launch_in_a_branch_that_does_not_run_is_not_read_with_the_callers_values():
    source = KERNEL + ("void run(int bs)\n{\n"
                       "    dim3 threads(bs, bs);\n"
                       "    if (bs == 16) {\n        k<<<1, threads>>>(0, 1);\n    } else {\n"
                       "        k<<<2, threads>>>(0, 1);\n    }\n}\n"
                       "int main() { run(32); }\n")
    dead, live = find_launch_sites(source)
    assert not dead.block.known
    assert "inside `if (bs == 16)` at line 5, which does not run here (bs = 32 from the call" in dead.block.reason
    assert live.block.value == (32, 32, 1)


def test_inside_an_equality_branch_the_variable_has_the_compared_value():
    env = ConstEnv("int run(int bs) {\n  if (bs == 16) {\n    return bs * 2;\n  }\n  return 0;\n}\n"
                   "int main() { return run(16); }\n")
    folded = env.fold("bs * 2", env.source.index("bs * 2"))
    assert folded.value == 32
    assert folded.via == ("bs = 16 inside `if (bs == 16)` at line 2",)


def test_a_size_helper_with_a_single_return_is_evaluated_and_others_are_not():
    env = ConstEnv("#define BLOCK 256\n"
                   "inline int iDivUp(int a, int b) { return (a % b != 0) ? (a / b + 1) : (a / b); }\n"
                   "static __host__ __device__ unsigned cdiv(unsigned a, unsigned b) { return (a + b - 1) / b; }\n"
                   "int fact(int n) { return n <= 1 ? 1 : n * fact(n - 1); }\n"
                   "int twice(int n) { int m = 2 * n; return m; }\n"
                   "int main() { return 0; }\n")
    end = len(env.source)
    assert env.fold("dim3(iDivUp(1000, BLOCK), cdiv(300, 16))", end).value == (4, 19, 1)
    assert env.fold("cdiv(-1, 1)", end).value == 4294967295  # the argument converts to the parameter's type
    assert "fact() calls itself" in env.fold("fact(4)", end).reason
    assert "call to function 'twice'" in env.fold("twice(3)", end).reason  # more than one statement
    assert "takes 2 arguments, got 1" in env.fold("iDivUp(1)", end).reason


def test_a_launch_through_a_size_helper_is_known():
    launch = _launch("int divUp(int a, int b) { return (a + b - 1) / b; }\n"
                     "int main() { const int n = 1000; k<<<divUp(n, 128), 128>>>(0, n); }\n")
    assert launch.grid.value == (8, 1, 1) and launch.grid.source == "launch-site"


def test_a_template_argument_list_in_a_parameter_does_not_shift_the_parameters_after_it():
    launch = _launch("void run(std::pair<int, int> shape, int n) { k<<<n / 128, 128>>>(0, n); }\n"
                     "int main() { run({1, 2}, 4096); }\n")
    assert launch.grid.value == (32, 1, 1)


def _folder(tmp_path, files: dict[str, str]):
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    return tmp_path / "kernel.cu"


WRAPPER = KERNEL + "void launch(float *y, int n, dim3 block)\n{\n    k<<<n / block.x, block>>>(y, n);\n}\n"


def test_a_wrapper_called_from_a_file_beside_it_takes_that_calls_values(tmp_path):
    src = _folder(tmp_path, {"kernel.cu": WRAPPER, "sizes.h": "#define N (1 << 16)\n",
                             "main.cpp": '#include "sizes.h"\nvoid launch(float *y, int n, dim3 block);\n'
                                         "int main()\n{\n    float *y;\n    launch(y, N, dim3(128));\n}\n"})
    launch = infer_launch("k", src.read_text(), source_path=str(src))
    assert (launch.grid.value, launch.block.value) == ((512, 1, 1), (128, 1, 1))
    (caveat,) = [a for a in launch.assumptions if "from the call" in a]
    assert "n = 65536 from the call at main.cpp:6 of launch()" in caveat
    # an edited caller is read again
    (tmp_path / "main.cpp").write_text("void launch(float *y, int n, dim3 block);\n"
                                       "int main() { float *y; launch(y, 1024, dim3(256)); }\n")
    os.utime(tmp_path / "main.cpp", ns=(0, 10**18))
    again = infer_launch("k", src.read_text(), source_path=str(src))
    assert (again.grid.value, again.block.value) == ((4, 1, 1), (256, 1, 1))


def test_a_static_wrapper_and_a_neighbours_own_function_of_that_name_take_no_values_from_beside(tmp_path):
    static = _folder(tmp_path, {"kernel.cu": KERNEL + "static " + WRAPPER.removeprefix(KERNEL),
                                "main.cpp": "int main() { launch(0, 1024, dim3(256)); }\n"})
    launch = infer_launch("k", static.read_text(), source_path=str(static))
    assert launch.grid.source == "default"
    assert any("which is not called in this file" in a and "beside" not in a for a in launch.assumptions)
    (tmp_path / "kernel.cu").write_text(WRAPPER)
    (tmp_path / "main.cpp").write_text("void launch(float *y, int n, dim3 b) { }\n"
                                       "int main() { launch(0, 1024, dim3(256)); }\n")
    own = infer_launch("k", WRAPPER, source_path=str(tmp_path / "kernel.cu"))
    assert own.grid.source == "default"
    assert any("nor in the files beside it" in a for a in own.assumptions), own.assumptions


def test_the_analysis_of_a_saved_cu_file_reads_its_callers_beside_it(nvcc_available, tmp_path):
    """The whole pipeline, real nvcc: the kernel's report carries the launch from main.cpp's call."""
    src = _folder(tmp_path, {"kernel.cu": WRAPPER,
                             "main.cpp": "void launch(float *y, int n, dim3 block);\n"
                                         "int main() { float *y; launch(y, 1 << 20, dim3(256)); }\n"})
    report = analyze_file(src, options=AnalysisOptions(lime=False))
    (kernel,) = report.kernels
    assert kernel.launch.grid.value == (4096, 1, 1) and kernel.launch.block.value == (256, 1, 1)
    assert kernel.launch.params["n"].value == 1 << 20
    assert any("main.cpp:2 of launch()" in a for a in kernel.launch.assumptions)
    text = render_file_report(report)  # the command line's text report states the assumption under the launch
    assert "  launch: <<<4096x1x1, 256x1x1, 0>>>" in text
    assert "    assumed: the launch at line 4 is inside a function" in text
