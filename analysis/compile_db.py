"""A project's own build flags from its `compile_commands.json`, found as clangd finds it.

A real CUDA project's include directories, defines, language standard and target architectures live in its
build, not in editor settings. CMake writes them with `CMAKE_EXPORT_COMPILE_COMMANDS=ON`; clangd reads that
file from the source file's directory or any parent, or from `build/` beside each; a setting may name the
directory instead. Kerncast does the same and takes from the entry for the analysed file (or, for a header or a
file the build does not list, the entry whose file is nearest in the directory tree) only the flags that change
what nvcc sees of the source: `-I`/`-isystem`, `-D`/`-U`, `-std`, `--expt-*`/`--extended-lambda` and the
architectures of `-arch`/`-gencode`. Everything else (output files, host-compiler pass-through, response files)
is dropped: the file is data from the project, never a command to run, and every kept value is checked.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from kerncast.analysis.input_files import check_regular, read_regular_text
from kerncast.analysis.toolchain import check_define, check_include_dir

_FILE_NAME = "compile_commands.json"
_MAX_BYTES = 64 << 20
_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_STD_RE = re.compile(r"^(?:c|gnu)\+\+(?:03|11|14|17|20|23)$")
_ARCH_RE = re.compile(r"^(?:sm|compute|lto)_\d+[a-z]?$")
_GENCODE_ARCH_RE = re.compile(r"(?<![A-Za-z0-9_])(?:sm|compute)_\d+[a-z]?(?![A-Za-z0-9_])")
_FLAG_SWITCHES = frozenset({"--expt-relaxed-constexpr", "--expt-extended-lambda", "--extended-lambda",
                            "-expt-relaxed-constexpr", "-expt-extended-lambda", "-extended-lambda"})
#: options whose value is the next argument; the pair is dropped unless listed above
_TAKES_VALUE = frozenset({"-o", "--output-file", "-x", "-ccbin", "--compiler-bindir", "-Xcompiler",
                          "--compiler-options", "-Xptxas", "--ptxas-options", "-Xlinker", "--linker-options",
                          "-MF", "-MT", "-MQ", "-include", "--pre-include", "-t", "--threads", "-maxrregcount",
                          "--options-file", "-optf", "-odir", "--output-directory", "-Xnvlink", "-Xarchive",
                          "-rdc", "--relocatable-device-code", "-l", "-L", "-imacros", "-idirafter", "-iquote"})


@dataclass
class BuildFlags:
    """The flags of one compile_commands.json entry that matter for compiling to PTX."""

    database: Path
    entry_file: Path
    exact: bool  # the entry is for the analysed file itself (not the nearest one)
    include_dirs: list[str] = field(default_factory=list)
    defines: list[str] = field(default_factory=list)
    undefines: list[str] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)  # -std=..., --expt-...
    archs: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)  # values that failed the checks, for a note

    def describe(self) -> str:
        how = "its entry" if self.exact else f"the nearest entry ({self.entry_file.name})"
        return f"build flags from {self.database} ({how})"


def find_database(source: Path, directory: str | os.PathLike[str] | None = None) -> Path | None:
    """The compile_commands.json for a source file: in `directory` when given (a setting), else in the file's
    directory or any parent, or in `build/` beside each, nearest first."""
    if directory is not None:
        d = Path(directory)
        candidate = d if d.name == _FILE_NAME else d / _FILE_NAME
        return candidate if candidate.is_file() else None
    for d in [source.parent, *source.parent.parents]:
        for candidate in (d / _FILE_NAME, d / "build" / _FILE_NAME):
            if candidate.is_file():
                return candidate
    return None


_cache: dict[Path, tuple[tuple[int, int], list[dict]]] = {}
_lock = threading.Lock()


def load_entries(database: Path) -> list[dict]:
    """The entries of a compile_commands.json (cached by size and mtime); [] when unreadable or malformed."""
    try:
        st = check_regular(database)
        if st.st_size > _MAX_BYTES:
            return []
        stamp = (st.st_mtime_ns, st.st_size)
        with _lock:
            hit = _cache.get(database)
            if hit is not None and hit[0] == stamp:
                return hit[1]
        data = json.loads(read_regular_text(database, _MAX_BYTES))
    except (OSError, ValueError):
        return []
    entries = [e for e in data if isinstance(e, dict) and isinstance(e.get("file"), str)] \
        if isinstance(data, list) else []
    with _lock:
        _cache[database] = (stamp, entries)
    return entries


def _entry_dir(entry: dict, database: Path) -> Path:
    d = entry.get("directory")
    base = database.parent
    if not isinstance(d, str) or not d:
        return base
    return Path(os.path.normpath(base / d))  # an absolute `d` replaces base


def _entry_file(entry: dict, database: Path) -> Path:
    return Path(os.path.normpath(_entry_dir(entry, database) / entry["file"]))


def _arguments(entry: dict) -> list[str]:
    args = entry.get("arguments")
    if isinstance(args, list) and all(isinstance(a, str) for a in args):
        return list(args)
    command = entry.get("command")
    if isinstance(command, str):
        try:
            return shlex.split(command)
        except ValueError:
            return []
    return []


def _real(path: Path) -> str:
    return os.path.normcase(os.path.realpath(path))


def _common_depth(a: Path, b: Path) -> int:
    n = 0
    for x, y in zip(Path(_real(a)).parts, Path(_real(b)).parts, strict=False):
        if x != y:
            break
        n += 1
    return n


def entry_for(source: Path, entries: list[dict], database: Path) -> tuple[dict, bool] | None:
    """The entry for `source`, else the nearest one by shared directory prefix, CUDA entries first."""
    if not entries:
        return None
    target = _real(source)
    for e in entries:
        if _real(_entry_file(e, database)) == target:
            return e, True

    def rank(e: dict) -> tuple[int, int]:
        f = _entry_file(e, database)
        return (_common_depth(f, source), 1 if f.suffix.lower() in (".cu", ".cuh") else 0)

    return max(entries, key=rank), False


def flags_for(source: Path, directory: str | os.PathLike[str] | None = None) -> BuildFlags | None:
    """The build flags for `source` from the compile_commands.json clangd would use, or None when there is none."""
    source = Path(os.path.abspath(source))
    database = find_database(source, directory)
    if database is None:
        return None
    found = entry_for(source, load_entries(database), database)
    if found is None:
        return None
    entry, exact = found
    flags = BuildFlags(database, _entry_file(entry, database), exact)
    _read_arguments(_arguments(entry)[1:], _entry_dir(entry, database), flags)
    return flags


def _read_arguments(args: list[str], cwd: Path, out: BuildFlags) -> None:
    """Keep the whitelisted flags of a compiler command line (the compiler itself already removed)."""
    i = 0
    while i < len(args):
        a = args[i]
        value, consumed = _split(a, args[i + 1] if i + 1 < len(args) else None)
        if a.startswith(("-I", "--include-path", "-isystem", "--system-include")):
            if value and _passable(check_include_dir, value):
                out.include_dirs.append(str(Path(os.path.normpath(cwd / value))))
            elif value:
                out.dropped.append(a if value in a else f"{a} {value}")
        elif a.startswith(("-D", "--define-macro")):
            if value and _passable(check_define, value):
                out.defines.append(value)
            elif value:
                out.dropped.append(value)
        elif a.startswith(("-U", "--undefine-macro")):
            _keep(value, _NAME_RE, out.undefines, out)
        elif a.startswith(("-std", "--std")):
            if value and _STD_RE.match(value):
                out.flags.append(f"-std={value}")
            elif value:
                out.dropped.append(a)
        elif a in _FLAG_SWITCHES:
            out.flags.append("--" + a.lstrip("-"))
        elif a.startswith(("-arch", "--gpu-architecture", "-code", "--gpu-code")):
            out.archs.extend(v for v in (value or "").split(",") if _ARCH_RE.match(v))
        elif a.startswith(("-gencode", "--generate-code")):
            out.archs.extend(_GENCODE_ARCH_RE.findall(value or ""))  # arch=compute_80,code=[compute_80,sm_80]
        else:
            consumed = 1 + (1 if a in _TAKES_VALUE else 0)
        i += consumed
    out.archs = list(dict.fromkeys(out.archs))


_VALUE_OPTIONS = ("--include-path", "--system-include", "--define-macro", "--undefine-macro", "--std",
                  "--gpu-architecture", "--gpu-code", "--generate-code", "-isystem", "-gencode", "-arch", "-code",
                  "-std", "-I", "-D", "-U")


def _split(arg: str, following: str | None) -> tuple[str | None, int]:
    """(value, arguments consumed) of `-Ivalue`, `-I value`, `--opt=value`, `--opt value`."""
    for opt in _VALUE_OPTIONS:
        if arg == opt:
            return following, 2
        if arg.startswith(opt):
            rest = arg[len(opt):]
            if rest.startswith("="):
                return rest[1:], 1
            if len(opt) == 2:  # -Ifoo, -DFOO
                return rest, 1
    return None, 1


def _keep(value: str | None, pattern: re.Pattern[str], into: list[str], out: BuildFlags) -> None:
    if value and pattern.match(value):
        into.append(value)
    elif value:
        out.dropped.append(value)


def _passable(check: Callable[[str], str], value: str) -> bool:
    """Whether the library passes `value` to nvcc (`toolchain.check_define`, `check_include_dir`): a value it
    would refuse is dropped here, with a note, rather than failing the whole file."""
    try:
        check(value)
    except ValueError:
        return False
    return True
