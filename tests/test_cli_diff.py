"""`kerncast diff`: a file against its version at a git revision (a real temporary repository with two commits:
the naive matrix multiply, then the tiled one under the same kernel name) or against another file."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from kerncast.server import cli

REPO = Path(__file__).resolve().parent.parent

#: the host code of both versions: a launch of each kernel
HOST = """
__global__ void scale(float *x, float a, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= a;
}

int main()
{
    const int n = 1024;
    float *A, *B, *C;
    dim3 threads(32, 32);
    dim3 grid(n / 32, n / 32);
    matmul<<<grid, threads>>>(A, B, C, n);
    scale<<<n * n / 256, 256>>>(C, 2.0f, n * n);
    return 0;
}
"""


def _example_kernel(name: str) -> str:
    """A kernel's definition in examples/matmul.cu, from `__global__` to its closing brace."""
    text = (REPO / "examples" / "matmul.cu").read_text()
    start = text.index(f"__global__ void {name}(")
    return text[start:text.index("\n}\n", start) + 3]


#: the example's naive multiply under the name the tiled version keeps
NAIVE = ("// matrix multiply, one thread per element of C\n"
         + _example_kernel("matmulNaive").replace("matmulNaive", "matmul") + HOST)

TILED = """// matrix multiply, 32x32 tiles of A and B in shared memory
#define TILE 32
__global__ void matmul(const float *A, const float *B, float *C, int n)
{
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * TILE + ty;
    int col = blockIdx.x * TILE + tx;
    float sum = 0.0f;
    for (int t = 0; t < n; t += TILE) {
        As[ty][tx] = A[row * n + t + tx];
        Bs[ty][tx] = B[(t + ty) * n + col];
        __syncthreads();
        for (int k = 0; k < TILE; ++k) {
            sum += As[ty][k] * Bs[k][tx];
        }
        __syncthreads();
    }
    C[row * n + col] = sum;
}
""" + HOST


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, timeout=30)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository whose examples/matmul.cu was the naive kernel (HEAD~1) and is now the tiled one."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed: no repository to compare against")
    root = tmp_path / "project"
    (root / "examples").mkdir(parents=True)
    _git(root, "init", "-q")
    _git(root, "config", "user.email", "test@example.com")
    _git(root, "config", "user.name", "test")
    source = root / "examples" / "matmul.cu"
    source.write_text(NAIVE)
    _git(root, "add", "examples/matmul.cu")
    _git(root, "commit", "-q", "-m", "naive")
    source.write_text(TILED)
    _git(root, "commit", "-q", "-a", "-m", "tiled")
    return root


def _diff(capsys, *args: str) -> tuple[int, str, str]:
    status = cli.main(["diff", *args, "--gpu", "v100"])
    out = capsys.readouterr()
    return status, out.out, out.err


def test_tiled_against_naive_commit_is_faster_in_every_format(repo, capsys):
    source = str(repo / "examples" / "matmul.cu")
    status, text, _ = _diff(capsys, source, "--rev", "HEAD~1", "--format", "json", "--fail-slower", "5")
    assert status == 0
    data = json.loads(text)
    rows = {k["name"]: k for k in data["kernels"]}
    assert set(rows) == {"matmul", "scale"} and data["old"] == f"HEAD~1:{source}"
    mm = rows["matmul"]
    assert mm["status"] == "kept" and mm["time_ratio"] < 0.9  # the tiled kernel reuses its loads
    assert mm["new"]["time_us"] < mm["old"]["time_us"]
    assert abs(rows["scale"]["time_ratio"] - 1) < 1e-9  # the untouched kernel did not change
    for side in ("old", "new"):
        assert all(mm[side][key] is not None for key in ("time_us", "watts", "energy_uj", "registers", "occupancy"))

    status, table, _ = _diff(capsys, source, "--rev", "HEAD~1", "--format", "markdown")
    assert status == 0
    lines = table.splitlines()
    assert "| kernel | time | power | energy | registers | occupancy | findings |" in lines
    row = next(ln for ln in lines if ln.startswith("| `matmul`"))
    assert "x faster)" in row and row.count("|") == 8
    assert any(ln.startswith("| `scale`") and "(same time)" in ln for ln in lines)

    status, text, _ = _diff(capsys, source, "--rev", "HEAD~1")
    assert status == 0 and "kernel matmul" in text and "x faster" in text


def test_a_slower_kernel_fails_the_run(repo, capsys):
    source = repo / "examples" / "matmul.cu"
    source.write_text(NAIVE)  # the working tree goes back to the naive kernel: slower than HEAD's tiled one
    status, _, err = _diff(capsys, str(source), "--fail-slower", "10")
    assert status == 1
    assert "matmul is" in err and "slower than in HEAD:" in err and "scale" not in err
    status, text, _ = _diff(capsys, str(source))  # without --fail-slower the change is reported, status 0
    assert status == 0 and "x slower" in text
    assert source.read_text() == NAIVE  # the working tree was not touched


def test_against_another_file_lists_added_and_removed_kernels(tmp_path, capsys):
    status, text, _ = _diff(capsys, str(REPO / "examples" / "matmul.cu"), "--against",
                            str(REPO / "examples" / "saxpy.cu"), "--format", "json")
    assert status == 0
    by_status = {k["name"]: k["status"] for k in json.loads(text)["kernels"]}
    assert by_status["matmulNaive"] == "added" and by_status["saxpy"] == "removed"


def test_bad_revision_and_outside_repository_are_clear_errors(repo, tmp_path, capsys):
    source = str(repo / "examples" / "matmul.cu")
    status, _, err = _diff(capsys, source, "--rev", "no-such-rev")
    assert status == 2 and "no-such-rev" in err
    status, _, err = _diff(capsys, source, "--rev=--output=/tmp/x")
    assert status == 2 and "not a revision" in err
    loose = tmp_path / "loose.cu"
    loose.write_text(NAIVE)
    status, _, err = _diff(capsys, str(loose))
    assert status == 2 and err.startswith("kerncast: ")


SAXPY = """__global__ void saxpy(float a, const float *x, float *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

int main()
{
    float *x, *y;
    saxpy<<<4096, 256>>>(2.0f, x, y, 1 << 20);
    return 0;
}
"""


def test_a_folder_compares_every_file_now_and_at_the_revision(repo, capsys):
    examples = repo / "examples"
    (examples / "gone.cu").write_text(SAXPY.replace("saxpy", "goneKernel"))
    _git(repo, "add", "examples/gone.cu")
    _git(repo, "commit", "-q", "-m", "gone")
    (examples / "gone.cu").unlink()  # deleted since HEAD
    (examples / "extra.cu").write_text(SAXPY)  # new since HEAD, not committed
    status, text, _ = _diff(capsys, str(examples), "--format", "json", "--fail-slower", "5")
    assert status == 0
    files = {Path(f["new"]).name: f for f in json.loads(text)["files"]}
    assert set(files) == {"matmul.cu", "gone.cu", "extra.cu"}
    assert [k["status"] for k in files["gone.cu"]["kernels"]] == ["removed"]
    assert [(k["name"], k["status"]) for k in files["extra.cu"]["kernels"]] == [("saxpy", "added")]
    assert {k["status"] for k in files["matmul.cu"]["kernels"]} == {"kept"}
    assert all(abs(k["time_ratio"] - 1) < 1e-9 for k in files["matmul.cu"]["kernels"])  # HEAD's own text

    status, table, _ = _diff(capsys, str(examples), "--rev", "HEAD~2", "--format", "markdown", "--fail-slower", "5")
    assert status == 0 and table.count("| kernel | time |") == 2  # matmul.cu and the new extra.cu
    assert "x faster)" in next(ln for ln in table.splitlines() if ln.startswith("| `matmul`"))
    assert "| `saxpy` (added) |" in table


def test_summary_line_counts_faster_and_unchanged_kernels(repo, capsys):
    status, table, _ = _diff(capsys, str(repo / "examples" / "matmul.cu"), "--rev", "HEAD~1", "--format", "markdown")
    assert status == 0
    assert table.splitlines()[0].endswith(": 2 kernels: 1 faster")  # matmul tiled; scale unchanged


def test_two_gpus_give_one_comparison_each(repo, capsys):
    source = str(repo / "examples" / "matmul.cu")
    status = cli.main(["diff", source, "--rev", "HEAD~1", "--gpu", "a100,h100", "--format", "json"])
    data = json.loads(capsys.readouterr().out)
    assert status == 0 and [g["gpu"] for g in data["by_gpu"]] == ["a100", "h100"]
    mm = {g["gpu"]: next(k for k in g["diff"]["kernels"] if k["name"] == "matmul") for g in data["by_gpu"]}
    assert mm["a100"]["new"]["time_us"] != mm["h100"]["new"]["time_us"]  # each GPU's own analysis
    assert all(m["time_ratio"] is not None for m in mm.values())
    assert cli.main(["diff", source, "--rev", "HEAD~1", "--gpu", "a100,h100"]) == 0
    text = capsys.readouterr().out
    assert "== GPU a100 ==" in text and "== GPU h100 ==" in text
    # --fail-slower judges each GPU: the run fails when the kernel is slower on any of them
    slower_on = [g for g, m in mm.items() if m["time_ratio"] > 1.01]
    status = cli.main(["diff", source, "--rev", "HEAD~1", "--gpu", "a100,h100", "--fail-slower", "1"])
    err = capsys.readouterr().err
    assert status == (1 if slower_on else 0)
    assert all(f"on {g} (more than --fail-slower 1%)" in err for g in slower_on)


def test_the_old_version_is_compiled_with_the_projects_flags(repo, capsys):
    """The version at the revision is compiled as the file at its own path is: with its compile_commands.json
    entry, so a kernel that needs a project-defined macro compiles at both versions."""
    examples = repo / "examples"
    needs_flag = ("#ifndef SCALE\n#error SCALE comes from the build\n#endif\n"
                  + SAXPY.replace("a * x[i]", "SCALE * a * x[i]"))
    (examples / "scaled.cu").write_text(needs_flag)
    entry = {"directory": str(examples), "file": "scaled.cu",
             "arguments": ["nvcc", "-DSCALE=2", "-c", "scaled.cu", "-o", "scaled.o"]}
    (repo / "compile_commands.json").write_text(json.dumps([entry]))
    _git(repo, "add", "examples/scaled.cu")
    _git(repo, "commit", "-q", "-m", "scaled")
    (examples / "scaled.cu").write_text(needs_flag.replace("SCALE * a", "SCALE * a * a"))
    status, text, err = _diff(capsys, str(examples / "scaled.cu"), "--format", "json")
    assert status == 0 and "SCALE comes from the build" not in err
    (row,) = json.loads(text)["kernels"]
    assert row["name"] == "saxpy" and row["status"] == "kept" and row["old"]["time_us"] is not None
