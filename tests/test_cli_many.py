"""`kerncast analyze PATH...` over several files and directories: a real process, real PTX from the examples."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def run_cli(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kerncast.server", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=REPO)


@pytest.fixture(scope="module")
def tree(tmp_path_factory, compile_example) -> Path:
    """ptx/{vector_add,saxpy}.ptx, ptx/deep/{transpose,reduction}.ptx, ptx/skip/matmul.ptx, ptx/notes.txt."""
    root = tmp_path_factory.mktemp("ptx")
    (root / "deep").mkdir()
    (root / "skip").mkdir()
    for name, where in [("vector_add", ""), ("saxpy", ""), ("transpose", "deep"), ("reduction", "deep"),
                        ("matmul", "skip")]:
        (root / where / f"{name}.ptx").write_text(compile_example(name).ptx)
    (root / "notes.txt").write_text("not a kernel\n")
    return root


def test_sarif_is_one_run_listing_every_analysed_file(tree: Path) -> None:
    proc = run_cli("analyze", str(tree), "-j", "2", "--format", "sarif", "--exclude", "skip")
    assert proc.returncode == 0, proc.stderr
    log = json.loads(proc.stdout)
    (run,) = log["runs"]
    uris = [a["location"]["uri"] for a in run["artifacts"]]
    assert [u.rsplit("/", 1)[-1] for u in uris] == ["saxpy.ptx", "vector_add.ptx", "reduction.ptx",
                                                    "transpose.ptx"]
    assert run["results"], "the examples have findings"
    rule_ids = [r["id"] for r in run["tool"]["driver"]["rules"]]
    assert len(rule_ids) == len(set(rule_ids))
    for res in run["results"]:
        assert rule_ids[res["ruleIndex"]] == res["ruleId"]
        index = res["locations"][0]["physicalLocation"]["artifactLocation"]["index"]
        assert 0 <= index < len(uris)
    # a transpose finding points at the transpose artifact, not at the first file's
    tr = [r for r in run["results"] if r.get("properties", {}).get("kernel", "").startswith("transpose")]
    assert tr and all(uris[r["locations"][0]["physicalLocation"]["artifactLocation"]["index"]]
                      .endswith("transpose.ptx") for r in tr)


def test_json_lists_files_with_a_summary_and_matches_one_worker(tree: Path) -> None:
    two = run_cli("analyze", str(tree / "deep"), str(tree / "vector_add.ptx"), "-j", "2", "--format", "json")
    one = run_cli("analyze", str(tree / "deep"), str(tree / "vector_add.ptx"), "-j", "1", "--format", "json")
    assert two.returncode == 0 and one.returncode == 0, two.stderr + one.stderr
    data = json.loads(two.stdout)
    assert [Path(f["file"]).name for f in data["files"]] == ["reduction.ptx", "transpose.ptx", "vector_add.ptx"]
    assert data["summary"]["files"] == 3 and data["summary"]["errors"] == 0
    assert data["summary"]["kernels"] == sum(len(f["kernels"]) for f in data["files"])
    assert json.loads(one.stdout) == data


def test_an_error_in_one_file_fails_the_run_and_keeps_the_others(tree: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.ptx"
    bad.write_text("this is not PTX\n")
    proc = run_cli("analyze", str(bad), str(tree / "saxpy.ptx"), "--format", "text")
    assert proc.returncode == 1
    assert f"{bad}:1:1: error: malformed PTX" in proc.stderr
    assert "kernel saxpy" in proc.stdout and "2 files" in proc.stdout


def test_text_has_every_file_and_no_progress_bar_off_a_terminal(tree: Path) -> None:
    proc = run_cli("analyze", str(tree), "-j", "2")
    assert proc.returncode == 0, proc.stderr
    assert "5 files" in proc.stdout
    assert "kernel matmulNaive" in proc.stdout and "kernel transposeTiled" in proc.stdout
    assert "[#" not in proc.stderr


def test_progress_bar_on_a_terminal(tree: Path) -> None:
    master, slave = pty.openpty()
    try:
        proc = subprocess.run([sys.executable, "-m", "kerncast.server", "analyze", str(tree), "-j", "2",
                               "--format", "json"], stdout=subprocess.PIPE, stderr=slave, timeout=600, cwd=REPO)
        os.close(slave)
        slave = -1
        seen = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
    finally:
        if slave >= 0:
            os.close(slave)
        os.close(master)
    assert proc.returncode == 0
    assert b"5/5" in seen and b"[" + b"#" * 30 + b"]" in seen
    assert json.loads(proc.stdout)["summary"]["files"] == 5  # stdout stays clean JSON


def test_no_file_found_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "readme.md").write_text("nothing here\n")
    proc = run_cli("analyze", str(tmp_path))
    assert proc.returncode == 1 and "no .cu, .cuh or .ptx file found" in proc.stderr
