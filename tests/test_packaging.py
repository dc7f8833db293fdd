"""Installing Kerncast is quiet and what it installs works: `pip install -e .` and `pip wheel .` print no
warning of the build backend, and the package unpacked from the wheel (not the editable one) analyses an example.

These run the real pip of the test environment, which builds in an isolated environment with setuptools from
the package index, as a user's install does.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
import warnings
import zipfile
from pathlib import Path

import pytest
from kerncast.analysis.toolchain import Toolchain

REPO = Path(__file__).resolve().parent.parent


def _load_backend():
    """The build backend module, from the folder pyproject.toml's `backend-path` names."""
    spec = importlib.util.spec_from_file_location("kerncast_backend", REPO / "build_backend" / "kerncast_backend.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


kerncast_backend = _load_backend()

#: A Python warning as printed (`BuildBackendWarning: ...`, `SetuptoolsDeprecationWarning: ...`); pip's own
#: notes about its index configuration are written `WARNING:` and are not the build's.
WARNING = re.compile(r"\b\w*Warning\b|Editable installation")


def _pip(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pip", *args], capture_output=True, text=True, timeout=timeout)


def _warnings(output: str) -> list[str]:
    return [line for line in output.splitlines() if WARNING.search(line)]


def test_no_folder_named_like_the_package_can_shadow_it():
    """The condition under which the backend filters setuptools' editable-install notice: nothing at the top
    of the repository is importable as `kerncast` ahead of the installed package."""
    assert not (REPO / "kerncast").exists()
    assert not (REPO / "kerncast.py").exists()


def test_the_backend_filters_only_the_editable_notice():
    """Inside the backend's filter the editable notice is dropped and any other warning still shows."""
    with pytest.warns(UserWarning, match="a real problem") as seen, kerncast_backend.without_editable_notice():
        warnings.warn("Editable installation.\n!!\n(the notice's details)", UserWarning, stacklevel=1)
        warnings.warn("a real problem", UserWarning, stacklevel=1)
    assert [str(w.message) for w in seen] == ["a real problem"]


def test_editable_install_prints_no_warning(tmp_path: Path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    done = _pip("--python", str(python), "install", "--no-deps", "-e", str(REPO))
    assert done.returncode == 0, done.stdout + done.stderr
    assert _warnings(done.stdout + done.stderr) == []
    where = subprocess.run([str(python), "-c", "import importlib.util as u; "
                            "print(u.find_spec('kerncast.analysis').origin)"],
                           capture_output=True, text=True, timeout=60, check=True)
    assert Path(where.stdout.strip()) == REPO / "analysis" / "__init__.py"


def test_wheel_builds_quietly_and_the_wheel_analyses_an_example(tmp_path: Path, nvcc_available: Toolchain):
    done = _pip("wheel", "--no-deps", "-w", str(tmp_path / "dist"), str(REPO))
    assert done.returncode == 0, done.stdout + done.stderr
    assert _warnings(done.stdout + done.stderr) == []
    (wheel,) = (tmp_path / "dist").glob("kerncast-*.whl")
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(site)
    assert (site / "kerncast" / "analysis" / "data" / "rules.toml").is_file()  # package data travels too
    assert (site / "kerncast" / "analysis" / "data" / "legacy_cuda.h").is_file()  # so do the compile stand-ins
    # the wheel's package first on the path; its dependencies come from the test environment
    run = [sys.executable, "-c", "import sys; sys.path.insert(0, sys.argv.pop(1)); "
           "import kerncast.server.cli as cli; print('from', cli.__file__); sys.exit(cli.main())",
           str(site), "analyze", str(REPO / "examples" / "matmul.cu")]
    out = subprocess.run(run, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"from {site / 'kerncast' / 'server' / 'cli.py'}" in out.stdout
    assert "matmul" in out.stdout.lower()
