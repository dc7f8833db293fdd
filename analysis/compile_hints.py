"""What to use instead, for nvcc errors that older CUDA code meets in a current toolkit (data/compile_hints.toml).

Kerncast compiles with the nvcc it finds, usually the CUDA 13 wheel, so code written for older releases fails on
APIs that are gone: the cudaThread* functions, fields of cudaDeviceProp, texture and surface references. nvcc
only says that a name is undefined; the hint says what replaced it. The nvcc wheel also ships no header of
NVIDIA's libraries (cuRAND, cuFFT, cuBLAS, ...): for a missing one, the hint names the wheel that has it. And code
that used a name of the standard library, Thrust, CUB or cooperative groups without including its header, because
another header brought it in, fails once newer headers stop doing so: the hint names the header, and a quick fix
adds the `#include`.

Such a file's kernels are usually fine: only its host code, or the way it declares textures, is out of date. So
when every error nvcc reports is a removed API (or follows from one), `compile` compiles the file again with
Kerncast's stand-ins for those APIs (data/legacy_cuda.h, each kind switched on by `stand_in_define`), and the
removed uses stay as warnings that name their replacement. Likewise, the headers a file is missing are
included first (nvcc's `-include`), and the uses of their names stay as warnings.
"""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass
from functools import cache, lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from kerncast.analysis.finding import Fix, TextEdit
from kerncast.analysis.includes import INCLUDE_RE, find_header_folders, header_text, includes_in
from kerncast.analysis.rules import Code, FixKind, rule

#: nvcc's message for each kind of removed API, the table of data/compile_hints.toml that holds its
#: replacements, how the hint names the removed thing, and the verb that agrees with that name
_KINDS = (
    (re.compile(r'^identifier "(\w+)" is undefined'), "thread_functions", "{}", "was"),
    (re.compile(r'^class "cudaDeviceProp" has no member "(\w+)"'), "device_properties", "cudaDeviceProp.{}", "was"),
    (re.compile(r"^(texture|surface) is not a template"), "references", "{} references", "were"),
)


@cache
def _tables() -> dict[str, Any]:
    text = resources.files("kerncast.analysis").joinpath("data/compile_hints.toml").read_text(encoding="utf-8")
    return tomllib.loads(text)


#: the macro of data/legacy_cuda.h that switches on the stand-ins for each kind (surface references have none)
_STAND_IN_DEFINES = {
    "thread_functions": "KERNCAST_LEGACY_THREAD_FUNCTIONS",
    "device_properties": "KERNCAST_LEGACY_DEVICE_PROPERTIES",
    "texture": "KERNCAST_LEGACY_TEXTURES",
}

#: the header of stand-ins, inside the package
LEGACY_HEADER = "data/legacy_cuda.h"


@dataclass(frozen=True)
class RemovedApi:
    """A removed API that an nvcc error names: what it was, what replaced it, and how to stand in for it."""

    subject: str  # "cudaThreadSynchronize", "cudaDeviceProp.clockRate", "texture references"
    hint: str  # "X was removed in CUDA 13; use Y"
    stand_in_define: str | None  # the macro that switches on Kerncast's stand-in for it, None where there is none
    renamed_to: str | None = None  # a function that takes the same arguments (the cudaThread* ones' replacements)


#: how `compile` prefixes an error that nvcc reported in an included file
_IN_HEADER_RE = re.compile(r"^in included file .+?, line \d+: ")


def _own_message(message: str) -> str:
    """nvcc's message without the prefix `compile` gives one reported in an included file."""
    return _IN_HEADER_RE.sub("", message, count=1)


def removed_api(message: str) -> RemovedApi | None:
    """The removed API an nvcc error message is about (also one reported in an included file), if the table
    lists it."""
    message = _own_message(message)
    for pattern, table, subject, verb in _KINDS:
        m = pattern.match(message)
        if m is None:
            continue
        entry = _tables()[table]
        use = entry["use"].get(m.group(1))
        if use is None:
            return None
        named = subject.format(m.group(1))
        return RemovedApi(named, f"{named} {verb} removed in {entry['release']}; use {use}",
                          _STAND_IN_DEFINES.get(m.group(1) if table == "references" else table),
                          use.split("(", 1)[0] if table == "thread_functions" else None)
    return None


#: the preprocessor's message for a header it did not find
_MISSING_HEADER_RE = re.compile(r"^([\w./+-]+): No such file or directory$")


def _missing_header(message: str) -> str | None:
    """The header an nvcc error says it did not find, as the #include spells it."""
    m = _MISSING_HEADER_RE.match(_own_message(message))
    return m.group(1) if m else None


def library_header_hint(message: str) -> str | None:
    """Where to get the header of a CUDA library that nvcc did not find (the nvcc wheel ships none), or None."""
    header = _missing_header(message)
    if header is None:
        return None
    for entry in _tables()["library_headers"].values():
        if header.startswith(tuple(entry["prefixes"])):
            return (f"{header} is a {entry['library']} header, which the nvcc wheel does not ship: pip install "
                    f"{entry['wheel']} beside Kerncast (nvcc then finds it), or add your CUDA toolkit's include "
                    "folder to the includeDirs setting (-I)")
    return None


@dataclass(frozen=True)
class ProjectHeader:
    """A header nvcc did not find that folders near the source hold: the build adds one of them with -I."""

    spelled: str  # as the #include spells it: "FDTD3dGPU.h"
    folders: tuple[Path, ...]  # nearest first
    source_dir: Path

    def shown(self, folder: Path) -> str:
        """A folder as the hint names it: relative to the source's folder."""
        return "this file's folder" if folder == self.source_dir else os.path.relpath(folder, self.source_dir)

    @property
    def hint(self) -> str:
        if len(self.folders) == 1:
            search = (", which #include <...> does not search" if self.folders[0] == self.source_dir
                      else ", which is not on the include path")
            return (f"{self.spelled} is in {self.shown(self.folders[0])}{search}: add it to the includeDirs setting "
                    "(-I), or let Kerncast read the build's compile_commands.json")
        shown = ", ".join(self.shown(f) for f in self.folders[:3])
        return (f"{self.spelled} is in {shown}{' and more' if len(self.folders) > 3 else ''}, none of them on the "
                "include path: add the build's one to the includeDirs setting (-I), or let Kerncast read the "
                "build's compile_commands.json")


def project_header(message: str, source_dir: Path) -> ProjectHeader | None:
    """The folders near `source_dir` that hold the header an nvcc error says it did not find; None for another
    error, a CUDA library's header, or a header no folder nearby holds."""
    header = _missing_header(message)
    if header is None or library_header_hint(message) is not None:
        return None
    source_dir = Path(os.path.abspath(source_dir))
    folders = find_header_folders(header, source_dir)
    return ProjectHeader(header, tuple(folders), source_dir) if folders else None


#: nvcc's message for a name that a namespace does not declare (in this file: that no included header declared)
_NO_MEMBER_RE = re.compile(r'^namespace "(\w+(?:::\w+)*)" has no member "(\w+)"')


@dataclass(frozen=True)
class MissingInclude:
    """A library name that an nvcc error says is undeclared, and the header that declares it."""

    symbol: str  # "thrust::make_tuple"
    header: str  # "thrust/tuple.h"

    @property
    def directive(self) -> str:
        """The line that includes the header: `#include <thrust/tuple.h>`."""
        return f"#include <{self.header}>"

    @property
    def hint(self) -> str:
        return (f"{self.symbol} is declared in <{self.header}>, which this file does not include (nor does any "
                f"header it includes): add {self.directive}")


@cache
def _declaring_headers() -> dict[str, str]:
    """Each name of the missing-includes table -> the header that declares it."""
    return {symbol: header for header, symbols in _tables()["missing_includes"]["headers"].items()
            for symbol in symbols}


#: nvcc's message for a name nothing declares, and a using-directive that would have brought a library's in
_UNDEFINED_RE = re.compile(r'^identifier "(\w+)" is undefined')
_USING_NAMESPACE_RE = re.compile(r"^[ \t]*using[ \t]+namespace[ \t]+(\w+(?:::\w+)*)[ \t]*;", re.MULTILINE)


@lru_cache(maxsize=8)
def _source_facts(source: str) -> tuple[frozenset[str], tuple[str, ...]]:
    """The headers a text includes itself and the namespaces it uses: read once per text, not once per error
    (a file that fails has many)."""
    return frozenset(name for name, _ in includes_in(source)), tuple(_USING_NAMESPACE_RE.findall(source))


def missing_include(message: str, source: str | None = None,
                    at: tuple[int, int] | None = None) -> MissingInclude | None:
    """The header that declares the library name an nvcc error says a namespace has no member of (also one
    reported in an included file), or that it says is undefined where `source` has `using namespace` for the
    library (`cout` after `using namespace std;`), or whose namespace it says is no namespace at all where
    `source` at `at` (the error's line and column) names it (`thrust::tuple` in a file that includes no Thrust
    header), if the table lists the name; None too when `source` already includes that header itself (then the
    name is not where the table says, and adding the line again would not help)."""
    own = _own_message(message)
    m = _NO_MEMBER_RE.match(own)
    if m is not None:
        symbol: str | None = f"{m.group(1)}::{m.group(2)}"
    elif _NOT_A_NAMESPACE_RE.match(own):
        if source is None or at is None:
            return None
        symbol = _listed_name_at(source, *at)
    else:
        bare = _UNDEFINED_RE.match(own)
        if bare is None or source is None:
            return None
        symbol = next((f"{ns}::{bare.group(1)}" for ns in _source_facts(source)[1]
                       if f"{ns}::{bare.group(1)}" in _declaring_headers()), None)
    header = _declaring_headers().get(symbol) if symbol else None
    if symbol is None or header is None or (source is not None and header in _source_facts(source)[0]):
        return None
    return MissingInclude(symbol, header)


#: nvcc's message where a qualified name starts with a namespace that nothing declared (no header of that library
#: is included at all): its column is the first name's
_NOT_A_NAMESPACE_RE = re.compile(r'^name followed by "::" must be a class or namespace name')
_QUALIFIED_RE = re.compile(r"\w+(?:\s*::\s*\w+)+")


def _listed_name_at(source: str, line: int, column: int) -> str | None:
    """The longest listed name (or namespace) that the qualified name written at (line, column) of `source`
    begins with: `thrust::tuple` for `thrust::tuple<int, int> t`, `thrust::placeholders` for
    `thrust::placeholders::_1`."""
    lines = source.splitlines()
    if not 1 <= line <= len(lines) or column < 1:
        return None
    m = _QUALIFIED_RE.match(lines[line - 1], column - 1)
    if m is None:
        return None
    parts = [p.strip() for p in m.group(0).split("::")]
    names = _declaring_headers()
    return next((n for k in range(len(parts), 1, -1) if (n := "::".join(parts[:k])) in names), None)


#: how a warning that compiled with one of Kerncast's stand-ins for a removed API says so
STAND_IN_LABEL = "Kerncast compiled it with a stand-in"


@dataclass(frozen=True)
class Answer:
    """What Kerncast can say about an nvcc error: the hint that follows its message, and how the warning says so
    when Kerncast compiled the file with its help (a stand-in, a header included first, a folder added)."""

    hint: str
    label: str = STAND_IN_LABEL


def explain(message: str, source: str | None = None, source_dir: Path | None = None,
            at: tuple[int, int] | None = None) -> Answer | None:
    """The answer to an nvcc error: what replaced the removed API it names ("X was removed in CUDA 13; use Y"),
    which header declares the library name it says is undeclared (unless `source` includes that header
    already), where to get the CUDA library header it did not find, or which folder near `source_dir` holds the
    project header it did not find (a walk of the folders: asked once per message); None for any other error."""
    found = removed_api(message)
    if found is not None:
        return Answer(found.hint)
    missing = missing_include(message, source, at)
    if missing is not None:
        return Answer(missing.hint, f"Kerncast compiled the file with <{missing.header}> included")
    library = library_header_hint(message)
    if library is not None:
        return Answer(library)
    nearby = project_header(message, source_dir) if source_dir is not None else None
    if nearby is not None:
        return Answer(nearby.hint, f"Kerncast compiled the file with {nearby.shown(nearby.folders[0])} on the "
                                   "include path")
    return None


def hint_for(message: str, source: str | None = None, source_dir: Path | None = None,
             at: tuple[int, int] | None = None) -> str | None:
    """The hint `explain` gives an nvcc error, or None."""
    answer = explain(message, source, source_dir, at)
    return answer.hint if answer else None


def legacy_header_text() -> str:
    """The C++ text of Kerncast's stand-ins for removed APIs (force-included by `compile` when they are needed)."""
    return resources.files("kerncast.analysis").joinpath(LEGACY_HEADER).read_text(encoding="utf-8")


def replacement_fix(code: Code, message: str, line_text: str | None, line: int, column: int) -> Fix | None:
    """The rename of a removed function to the one that replaced it with the same arguments, where nvcc's error
    or warning points at the name in the file's own line (not in a macro's expansion or an included file)."""
    api = removed_api(message)
    if api is None or api.renamed_to is None or line_text is None:
        return None
    name, start = api.subject, column - 1
    end = start + len(name)
    if line_text[start:end] != name or (end < len(line_text) and (line_text[end].isalnum() or line_text[end] == "_")):
        return None
    return Fix(FixKind.USE_REPLACEMENT_API, f"Use {api.renamed_to} (it takes the same arguments)",
               {"removed": name, "replacement": api.renamed_to}, [TextEdit(line, column, line, column + len(name),
                                                                           api.renamed_to)],
               rule(code).fix(FixKind.USE_REPLACEMENT_API).applicability)


#: a conditional directive that opens (#if, #ifdef, #ifndef) or closes (#endif) a block
_CONDITIONAL_RE = re.compile(r"^[ \t]*#[ \t]*(if|ifdef|ifndef|endif)\b")
_INCLUDE_RE = re.compile(r"^[ \t]*#[ \t]*include\b")
#: the two lines of an include guard: `#ifndef NAME` then `#define NAME`
_GUARD_RE = re.compile(r"\A(?:[ \t]*(?://[^\n]*)?\n)*"  # blank and comment lines
                       r"[ \t]*#[ \t]*ifndef[ \t]+(\w+)[ \t]*\n[ \t]*#[ \t]*define[ \t]+(\w+)")


def include_fix(code: Code, message: str, source: str | None, source_dir: Path | None = None,
                at: tuple[int, int] | None = None) -> Fix | None:
    """The `#include` line that the library name of an nvcc error needs, added after the file's last #include
    that no `#if` encloses (an include guard does not count), or above the first line where there is none; but
    above the first project header (quoted, found in `source_dir`) that uses a name of that library header
    itself, since such a header relies on its includer for it. None for any other error, and where `source`
    is None (the error is in an included file, which is not edited).
    """
    if source is None or (missing := missing_include(message, source, at)) is None:
        return None
    before = _first_header_using(missing.header, source, source_dir) if source_dir is not None else None
    line, column, text = _include_insertion(source, missing.directive, before)
    return Fix(FixKind.ADD_INCLUDE, f"Add {missing.directive}", {"symbol": missing.symbol, "header": missing.header},
               [TextEdit(line, column, line, column, text)], rule(code).fix(FixKind.ADD_INCLUDE).applicability)


@cache
def _names_of(header: str) -> re.Pattern[str]:
    """A pattern for the qualified names (`thrust::get`) the table lists for a library header."""
    names = [n for n, h in _declaring_headers().items() if h == header]
    return re.compile(r"\b(?:" + "|".join(r"\s*::\s*".join(map(re.escape, n.split("::"))) for n in names) + r")\b")


def _first_header_using(header: str, source: str, source_dir: Path) -> int | None:
    """The line of the file's first quoted #include whose header, found beside the file, uses a name that
    `header` declares. Its uses may only reach nvcc when the file's own uses compile (a template is checked
    where it is instantiated), so the error at hand does not show them."""
    for number, text in enumerate(source.splitlines(), 1):
        m = INCLUDE_RE.match(text)
        if m is None or m.group("open") != '"':
            continue
        text = header_text(source_dir / m.group("name"))
        if text is not None and _names_of(header).search(text):
            return number
    return None


def _include_insertion(source: str, directive: str, before: int | None = None) -> tuple[int, int, str]:
    """(line, column, text) that inserts `directive` as a line of its own after the last top-level #include,
    or above line `before` when that line is top-level too."""
    lines = source.splitlines()
    guard = _GUARD_RE.match(source)
    top = 1 if guard is not None and guard.group(1) == guard.group(2) else 0
    depth, last = 0, 0
    for number, text in enumerate(lines, 1):
        m = _CONDITIONAL_RE.match(text)
        if m is not None:
            depth += -1 if m.group(1) == "endif" else 1
        elif depth == top and number == before:
            return number, 1, directive + "\n"
        elif depth == top and _INCLUDE_RE.match(text):
            last = number
    if last == 0:
        return 1, 1, directive + "\n"
    if last < len(lines):
        return last + 1, 1, directive + "\n"
    return last, len(lines[last - 1]) + 1, "\n" + directive
