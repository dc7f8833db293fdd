"""Functions parsed before, so that parsing an edited file parses only the functions whose text changed.

A save in the editor changes one kernel at a time. Before lexing, a scan of the text finds every module-scope
function (`.entry`/`.func` at the start of a line, up to its closing brace); a function whose exact text,
first line, file and `.file` table were parsed before is neither lexed nor parsed again: the lexer leaves a
placeholder token for it and the parser puts the earlier `Function` in its place. Its instructions' lines are
the same because its position is part of the key. Only functions whose parse ended exactly at the end of the
scanned text are kept, so a scan that reads a function differently from the parser is never trusted.

The kept objects are shared by the analyses that reuse them; the pipeline treats a parsed function as
read-only apart from setting the same demangled name and, for `.ptx` input, the same PTX positions again.

An edit above a kernel in the `.cu` file changes no PTX instruction, only the source lines in the kernel's
`.loc` directives. Such a function is found by its *moved key*: the key with each `.loc`/`inlined_at` line
written relative to the first line of its file in the function (`moved_key`). It is not parsed again either:
the earlier function is copied with its instructions' source lines moved by each file's distance
(`moved_function`), which costs a fraction of a parse.
"""

from __future__ import annotations

import dataclasses
import hashlib
import operator
import re
from dataclasses import dataclass

from kerncast.analysis.lru import BoundedLru
from kerncast.analysis.ptx.model import Function, Instruction, SourceLoc

#: functions kept (a few tens of KB each)
DEFAULT_MAX_FUNCTIONS = 256

#: patterns of a line's start begin with the newline before it (see `match_lines`)
_START_RE = re.compile(r"\n[ \t]*(?:\.(?:visible|weak|extern)[ \t]+)*\.(?:entry|func)\b")
_FILE_RE = re.compile(r"\n([ \t]*\.file\b[^\n]*)")


#: a function, the first line of each file index in it, and its module's `.file` table
MovedEntry = tuple[Function, dict[str, int], dict[int, str]]


class FunctionReuse(BoundedLru[str, Function]):
    """A bounded LRU of parsed functions by their key (see the module docstring); thread-safe. The parser counts
    the functions it took from here (`reused`) and those it parsed anew (`parsed`)."""

    def __init__(self, max_functions: int = DEFAULT_MAX_FUNCTIONS) -> None:
        super().__init__(max_functions)
        self.reused = 0
        self.parsed = 0
        #: of the reused functions, those that had only moved in the source (copied with moved lines)
        self.moved = 0
        #: by moved key, the latest function parsed or moved with it, its files' first lines and `.file` table
        self._by_moved_key: BoundedLru[str, MovedEntry] = BoundedLru(max_functions)
        #: the functions the latest parse copied with moved lines, by identity, each with its original
        self._origins: dict[int, tuple[Function, Function]] = {}

    def get_moved(self, key: str) -> MovedEntry | None:
        """The function last seen with this moved key, the first line of each file index in it, and the
        module's `.file` table (index -> name), which is the table of every text with this moved key."""
        return self._by_moved_key.get(key)

    def put_moved(self, key: str, fn: Function, bases: dict[str, int], files: dict[int, str]) -> None:
        self._by_moved_key.put(key, (fn, bases, files))

    def keep_origins(self, origins: list[tuple[Function, Function]]) -> None:
        """Keep the latest parse's (copy, original) pairs in place of the earlier parse's."""
        self._origins = {id(copy): (copy, original) for copy, original in origins}

    def origin(self, fn: Function) -> Function | None:
        """The function the latest parse copied `fn` from with its lines moved; None for any other function."""
        found = self._origins.get(id(fn))
        return found[1] if found is not None and found[0] is fn else None


@dataclass(frozen=True)
class Span:
    """A module-scope function's text: 1-based first and last line, and its key."""

    first: int
    last: int
    key: str
    #: the hash of the module's `.file` table, part of the key
    files: str = ""


def function_spans(text: str, lines: list[str], path: str | None) -> dict[int, Span]:
    """Every module-scope function's span by its first line, keyed by path, `.file` table, position and text."""
    files = hashlib.sha256("\n".join(m.group(1) for _, m in match_lines(text, _FILE_RE)).encode()).hexdigest()
    out: dict[int, Span] = {}
    for first, _ in match_lines(text, _START_RE):
        last = span_end(lines, first)
        body = "\n".join(lines[first - 1:last])
        key = hashlib.sha256(f"{path}\0{files}\0{first}\0{body}".encode("utf-8", "surrogatepass")).hexdigest()
        out[first] = Span(first, last, key, files)
    return out


def match_lines(text: str, pattern: re.Pattern[str]) -> list[tuple[int, re.Match[str]]]:
    """(1-based line, match) of every match of `pattern` at the start of a line, counting the newlines once
    through the text. The pattern begins with a newline (`\\n[ \\t]*...`), matched in the text after a newline
    put in front of it: the regular-expression engine then looks for newlines only, where a pattern anchored
    with `^` under MULTILINE is tried at every character (two to three times slower on a PTX module). The
    matches' offsets are those of that text, one more than the text's own."""
    padded = "\n" + text
    out = []
    line, pos = 0, 0
    for m in pattern.finditer(padded):
        line += padded.count("\n", pos, m.start() + 1)
        pos = m.start() + 1
        out.append((line, m))
    return out


def span_end(lines: list[str], first: int) -> int:
    """The last line (1-based) of the function starting at `first`: its closing brace, or the `;` of a
    declaration without a body.

    Once the body's `{` is seen the depth stays above 0 until the closing brace, so a line without a brace
    changes nothing and is passed over without cutting its comment off (most of a function's lines); before
    it, so is a line without a brace or a `;` (a parameter's line)."""
    depth, seen = 0, False
    for i in range(first - 1, len(lines)):
        line = lines[i]
        if "{" not in line and "}" not in line and (seen or ";" not in line):
            continue
        code = line.split("//", 1)[0]
        depth += code.count("{") - code.count("}")
        seen = seen or "{" in code
        if (seen and depth <= 0) or (not seen and code.rstrip().endswith(";")):
            return i + 1
    return len(lines)


#: a `.loc` or `inlined_at`, with its file index and line where nvcc's form (decimal, no leading zero) follows
_LOC_RE = re.compile(r"(?:^[ \t]*\.loc|\binlined_at)\b[ \t]*(?:([1-9][0-9]*|0)[ \t]+([1-9][0-9]*|0)(?![\w.]))?",
                     re.MULTILINE)


def moved_key(path: str | None, files: str, first: int, body: str) -> tuple[str, dict[str, int]] | None:
    """A function's moved key (path, `.file` table, position and text with each file's `.loc` lines relative to
    that file's first line in it) and those first lines by file index; None when a `.loc` is written in a form
    this does not read."""
    found = list(_LOC_RE.finditer(body))
    bases: dict[str, int] = {}
    for m in found:
        if m.group(2) is None:
            return None
        line = int(m.group(2))
        if line and line < bases.get(m.group(1), line + 1):
            bases[m.group(1)] = line
    parts, at = [], 0
    for m in found:
        line = int(m.group(2))
        if line:
            parts += [body[at:m.start(2)], "@", str(line - bases[m.group(1)])]
            at = m.end(2)
    parts.append(body[at:])
    text = "".join(parts)
    key = hashlib.sha256(f"{path}\0{files}\0{first}\0{text}".encode("utf-8", "surrogatepass")).hexdigest()
    return key, bases


def moved_function(fn: Function, deltas: dict[str, int]) -> Function:
    """A copy of `fn` whose instructions' source lines in each file (by name) are moved by that file's delta;
    everything else, which a `.loc` line does not change, is shared with `fn`."""
    moved: dict[int, SourceLoc] = {}  # the instructions after one `.loc` share its SourceLoc, and the copy

    def move(loc: SourceLoc) -> SourceLoc:
        out = moved.get(id(loc))
        if out is None:
            at = None if loc.inlined_at is None else move(loc.inlined_at)
            delta = deltas.get(loc.file, 0)
            out = moved[id(loc)] = SourceLoc(loc.file, loc.line + delta if loc.line else 0, loc.column, at)
        return out

    body = [_with_loc(ins, None if ins.loc is None else move(ins.loc)) for ins in fn.body]
    return dataclasses.replace(fn, body=body)


def _with_loc(ins: Instruction, loc: SourceLoc | None) -> Instruction:
    """A copy of an instruction at another source location, keeping what was worked out from its text."""
    values = list(_INSTRUCTION_VALUES(ins))
    values[_LOC_AT] = loc
    return Instruction(*values)


_INSTRUCTION_FIELDS = [f.name for f in dataclasses.fields(Instruction)]
#: every field of an instruction, in the order its constructor takes them (all are constructor arguments)
_INSTRUCTION_VALUES = operator.attrgetter(*_INSTRUCTION_FIELDS)
_LOC_AT = _INSTRUCTION_FIELDS.index("loc")
