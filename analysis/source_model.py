"""The source model: what Kerncast knows about a CUDA file's text, read once from its tokens.

Kernels (name, parameter names, signature and body ranges), every function body, launch sites with their
folded configuration, `// kerncast:` annotations with their targets, and array declarations with the
function that declares them. Launch inference, the fix builders, and the editor's lenses, hovers, inlay hints
and code actions all read this model, so none of them scans C++ text on its own.

Kernels defined in `#include`d `.cu` files and headers belong to the translation unit too: `scan_file` reads
quoted includes (beside the file, then the include directories) and adds their kernels, so their parameter
names are known by name. It also gives the scan what the file's place adds to its launches: the macros of its
headers (`header_macros`) and, when a launch wrapper's parameter needs them, the calls in the sources beside
it (`neighbours`).
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kerncast.analysis.cexpr import ConstEnv, Folded, Macro, Token
from kerncast.analysis.csyntax import matching_bracket, split_parameters, split_top
from kerncast.analysis.header_macros import read_included
from kerncast.analysis.includes import header_text, real_path
from kerncast.analysis.lru import BoundedLru
from kerncast.analysis.neighbours import Neighbours

Dim = tuple[int, int, int]
#: bounds checked where launch input enters: CUDA's largest grid dimension, and a count (bytes, trips)
#: beyond anything a kernel launch can have
MAX_LAUNCH_DIM = 2**31 - 1
MAX_COUNT = 2**40


def parse_dim(text: str) -> Dim:
    """Parse a launch dimension: `1024`, `32,8`, `32x8x1` -> (x, y, z); missing dimensions are 1.

    Raises ValueError with a message fit to show a user (the CLI prints it as is).
    """
    parts = [p.strip() for p in re.split(r"[,xX*]", str(text).strip())]
    if not 1 <= len(parts) <= 3 or not all(re.fullmatch(r"\d+", p) for p in parts):
        raise ValueError(f"expected 1 to 3 positive integers separated by ',' or 'x' (e.g. 256 or 32,8), "
                         f"got {text!r}")
    values = [int(p) for p in parts] + [1] * (3 - len(parts))
    if any(v <= 0 for v in values):
        raise ValueError(f"launch dimensions must be positive, got {text!r}")
    if any(v > MAX_LAUNCH_DIM for v in values):
        raise ValueError(f"launch dimensions are at most 2^31-1 (CUDA's largest grid dimension), got {text!r}")
    return (values[0], values[1], values[2])


def parse_count(text: str, what: str) -> int:
    """Parse a non-negative integer flag value (`--smem`, `--loops`); ValueError names the flag."""
    value = str(text).strip()
    if not re.fullmatch(r"\d+", value) or len(value) > 30:
        raise ValueError(f"{what} must be a non-negative integer, got {text!r}")
    if int(value) > MAX_COUNT:
        raise ValueError(f"{what} must be at most 2^40, got {text!r}")
    return int(value)




# ------------------------------------------------------------------------------------------ source facts


@dataclass
class LaunchSite:
    """One `kernel<<<grid, block, smem, stream>>>(args)` call in a source file.

    `kernel` is the name as written (qualified names keep their `::`), `template_args` the raw texts of its
    explicit template arguments and `template_values` their folded values. `grid`/`block` are folded to
    `(x, y, z)` and `smem` to bytes (a missing smem argument folds to 0, as CUDA defines).
    """

    kernel: str
    line: int
    column: int
    statement_offset: int
    template_args: list[str]
    template_values: list[Folded]
    grid_expr: str
    block_expr: str
    smem_expr: str | None
    stream_expr: str | None
    grid: Folded
    block: Folded
    smem: Folded
    args: list[str]
    arg_values: list[Folded]
    config_offset: int = -1

    @property
    def base_name(self) -> str:
        return self.kernel.rsplit("::", 1)[-1]

    @property
    def config_text(self) -> str:
        inner = ", ".join(e for e in (self.grid_expr, self.block_expr, self.smem_expr, self.stream_expr) if e)
        return f"<<<{inner}>>>"

    def same_config(self, other: LaunchSite) -> bool:
        return (self.grid.as_dim3(), self.block.as_dim3(), self.smem.value) == \
               (other.grid.as_dim3(), other.block.as_dim3(), other.smem.value)


@dataclass
class KernelDefinition:
    """A `__global__` function: name, parameter names in order, template parameter text, header lines."""

    name: str
    line: int
    start_offset: int
    name_offset: int
    params: list[str | None]
    template_params: str | None
    is_definition: bool
    #: offsets of the parameter list's `)` and of the body's `{` and `}` (None for a declaration)
    params_end_offset: int = -1
    body_start: int | None = None
    body_end: int | None = None
    file: str | None = None

    @property
    def base_name(self) -> str:
        return self.name.rsplit("::", 1)[-1]


@dataclass(kw_only=True)
class LaunchValues:
    """Launch values the user states instead of the code: grid and block size, dynamic shared memory, loop trip
    count and parameter values (by name or 0-based position). A `// kerncast:` annotation and a command-line
    or editor override state the same set, so launch inference takes both the same way (`sizes`)."""

    grid: Dim | None = None
    block: Dim | None = None
    smem: int | None = None
    loops: int | None = None
    params: dict[str, int] = field(default_factory=dict)

    def sizes(self) -> dict[str, Dim | int | None]:
        """Grid, block, dynamic shared memory and loops by name, None where not stated."""
        return {"grid": self.grid, "block": self.block, "smem": self.smem, "loops": self.loops}


@dataclass(kw_only=True)
class Annotation(LaunchValues):
    """A `// kerncast: key=value ...` comment, the launch values it states, and what it applies to.

    `target` is "launch" or "kernel" with `target_name` and `target_line`, or None when no launch or kernel
    definition follows it. Keys it could not read are listed in `errors`, never applied. `placeholders` names
    the keys written with a trailing `?` (`loops=10?`): their value is used but stays an assumption, so that
    writing the default in does not turn a guess into a stated fact.
    """

    line: int
    text: str
    offset: int
    end_offset: int
    errors: list[str] = field(default_factory=list)
    target: str | None = None
    target_name: str | None = None
    target_line: int | None = None
    placeholders: set[str] = field(default_factory=set)


#: keys whose value may be written as a placeholder, `loops=10?`: used, and still reported as assumed
PLACEHOLDER_KEYS = frozenset({"loops"})

_ANNOTATION_RE = re.compile(r"^(?://|/\*)\s*kerncast\s*:(.*?)(?:\*/)?\s*$", re.S)


@dataclass
class SourceFacts:
    """Everything launch inference, fixes and the editor read from one source file, scanned once."""

    env: ConstEnv
    sites: list[LaunchSite]
    kernels: list[KernelDefinition]
    annotations: list[Annotation]
    functions: list[FunctionBody] = field(default_factory=list)
    arrays: list[ArrayDeclaration] = field(default_factory=list)
    #: kernels defined in `#include`d `.cu` files and headers (see `scan_file`)
    included_kernels: list[KernelDefinition] = field(default_factory=list)
    #: the launch sites and kernels by base name, made on the first question: a file's facts are read-only once
    #: scanned, and each of its kernels asks for its own name (a look through every site and kernel per kernel)
    _named: dict[str, dict[str, list[Any]]] = field(default_factory=dict, init=False, repr=False, compare=False)

    @property
    def text(self) -> str:
        return self.env.source

    def position(self, offset: int) -> tuple[int, int]:
        """(line, column), both 1-based, of an offset."""
        return self.env.lines.line(offset), self.env.lines.column(offset)

    def offset(self, line: int, column: int) -> int:
        """The offset of a 1-based (line, column)."""
        return self.env.lines.offset(line, column)

    def line_tokens(self, line: int) -> range:
        """Indexes into `env.tokens` of the tokens on a 1-based line: code only (comments and the contents of
        string literals are masked, preprocessor lines blanked), for the rules that read a finding's line."""
        tokens = self.env.tokens
        first = self.env.token_index(self.offset(line, 1))
        end = first
        while end < len(tokens) and self.env.lines.line(tokens[end].offset) == line:
            end += 1
        return range(first, end)

    def kernel(self, base_name: str, *, included: bool = True) -> KernelDefinition | None:
        """The kernel of that name: its definition if there is one, else its declaration."""
        named = self._by_name("kernels" if included else "own kernels").get(base_name, [])
        return next((d for d in named if d.is_definition), named[0] if named else None)

    def sites_of(self, base_name: str) -> list[LaunchSite]:
        """The launch sites of kernels of that base name, in the file's order."""
        return list(self._by_name("sites").get(base_name, ()))

    def _by_name(self, what: str) -> dict[str, list[Any]]:
        """The sites, the kernels (included ones after the file's own) or the file's own kernels by base name,
        each in order; made once per kind."""
        found = self._named.get(what)
        if found is None:
            pool: list[Any] = self.sites if what == "sites" else \
                self.kernels + (self.included_kernels if what == "kernels" else [])
            found = {}
            for item in pool:
                found.setdefault(item.base_name, []).append(item)
            self._named[what] = found
        return found

    def function_at(self, offset: int) -> FunctionBody | None:
        """The function whose body holds the offset."""
        return next((f for f in self.functions if f.body_start <= offset <= f.body_end), None)

    def function_at_line(self, line: int) -> FunctionBody | None:
        return next((f for f in self.functions if self.position(f.body_start)[0] <= line
                     <= self.position(f.body_end)[0]), None)

    def array(self, name: str, function: FunctionBody | None) -> ArrayDeclaration | None:
        """The array `name` as the code in `function` sees it: declared in it, else at file scope."""
        own = [a for a in self.arrays if a.name == name and a.function is function and function is not None]
        if own:
            return own[-1]
        return next((a for a in self.arrays if a.name == name and a.function is None), None)


@dataclass
class FunctionBody:
    """A function definition (kernel or not): its name, where its name is, and its body's braces."""

    name: str
    name_offset: int
    body_start: int
    body_end: int
    is_kernel: bool


@dataclass
class ArrayDimension:
    """One `[size]` of an array declaration: the text between the brackets and its offsets."""

    text: str
    start: int
    end: int


@dataclass
class ArrayDeclaration:
    """`[__shared__] T name[d1][d2]...;` with the function that declares it (None at file scope)."""

    name: str
    offset: int
    end_offset: int
    dims: list[ArrayDimension]
    shared: bool
    function: FunctionBody | None


_SCAN_CACHE: dict[tuple[str, tuple, Neighbours | None], SourceFacts] = {}
_SCAN_CACHE_SIZE = 8
_SCAN_LOCK = threading.Lock()


def scan_source(cuda_source: str, header_macros: tuple[Macro, ...] = (),
                neighbours: Neighbours | None = None) -> SourceFacts:
    """Scan a CUDA source for launch sites, kernel definitions and annotations (with their targets).

    `header_macros` are the `#define`s its headers give it (`header_macros.included_macros`); `neighbours`
    the files beside it whose calls of its launch wrappers count. The last few scans are kept, because a
    file's kernels are inferred one after another from one text.
    """
    key = (cuda_source, tuple((m.name, m.params, m.offset, tuple(t.text for t in m.body or ())) for m in header_macros),
           neighbours)
    with _SCAN_LOCK:
        cached = _SCAN_CACHE.get(key)
    if cached is not None:
        return cached
    facts = _scan(cuda_source, header_macros, neighbours)
    with _SCAN_LOCK:  # the language server scans from two analysis threads and its event loop
        _SCAN_CACHE[key] = facts
        while len(_SCAN_CACHE) > _SCAN_CACHE_SIZE:
            _SCAN_CACHE.pop(next(iter(_SCAN_CACHE)))
    return facts


def scanned(cuda_source: str | None) -> SourceFacts | None:
    """`scan_source` of a text, or None without a text or for one the scanner cannot read (a nesting too deep,
    a malformed construct): the findings then do without the source model (no cause shown, no edit), since no
    edit is safer than a wrong one."""
    if not cuda_source:
        return None
    try:
        return scan_source(cuda_source)
    except (ValueError, IndexError, RecursionError):
        return None


def _scan(cuda_source: str, header_macros: tuple[Macro, ...] = (), neighbours: Neighbours | None = None
          ) -> SourceFacts:
    env = ConstEnv(cuda_source, header_macros, neighbours.environments if neighbours is not None else None)
    sites = _launch_sites(env)
    kernels = _kernel_definitions(env)
    annotations = _annotations(env)
    _attach_annotations(env, annotations, sites, kernels)
    functions = _function_bodies(env, kernels)
    return SourceFacts(env, sites, kernels, annotations, functions, _arrays(env, functions))


def find_launch_sites(cuda_source: str) -> list[LaunchSite]:
    """Every `<<<...>>>` launch in the source, in order, with folded values (unknown ones with reasons)."""
    try:
        return _launch_sites(ConstEnv(cuda_source))
    except (ValueError, IndexError, RecursionError):
        return []


def find_annotations(cuda_source: str) -> list[Annotation]:
    """Every `// kerncast:` annotation with its line, values, errors and the launch or kernel it applies to."""
    try:
        return scan_source(cuda_source).annotations
    except (ValueError, IndexError, RecursionError):
        return []


def find_kernel_definitions(cuda_source: str) -> list[KernelDefinition]:
    """Every `__global__` function declared or defined in the source, with its parameter names."""
    try:
        return _kernel_definitions(ConstEnv(cuda_source))
    except (ValueError, IndexError, RecursionError):
        return []


def _text(env: ConstEnv, tokens: list[Token]) -> str:
    """The source text of a token run, with whitespace collapsed."""
    if not tokens:
        return ""
    last = tokens[-1]
    return re.sub(r"\s+", " ", env.code[tokens[0].offset:last.offset + len(last.text)]).strip()


def _statement_start(tokens: list[Token], k: int) -> int:
    """Index of the first token of the statement that contains token k."""
    j = k
    while j > 0 and tokens[j - 1].text not in (";", "{", "}"):
        j -= 1
    return j


def _launch_sites(env: ConstEnv) -> list[LaunchSite]:
    toks = env.tokens
    sites = []
    for k, tok in enumerate(toks):
        if tok.text == "<<<":
            site = _launch_site_at(env, k)
            if site is not None:
                sites.append(site)
    return sites


def _launch_site_at(env: ConstEnv, k: int) -> LaunchSite | None:
    """Read the launch whose `<<<` is token k: kernel name before it, config inside, arguments after."""
    toks = env.tokens
    j = k - 1
    template: list[Token] = []
    if j >= 0 and toks[j].text in (">", ">>"):
        depth = 0
        end = j
        while j >= 0:
            depth += {">": 1, ">>": 2, "<": -1, "<<": -2}.get(toks[j].text, 0)
            if depth <= 0:
                break
            j -= 1
        if j < 0:
            return None
        template = toks[j + 1:end]
        j -= 1
    if j < 0 or toks[j].kind != "id":
        return None
    name_index = j
    while name_index >= 2 and toks[name_index - 1].text == "::" and toks[name_index - 2].kind == "id":
        name_index -= 2
    name = "".join(t.text for t in toks[name_index:j + 1])
    close = k + 1
    depth = 0
    while close < len(toks) and not (toks[close].text == ">>>" and depth == 0):
        depth += {"(": 1, "[": 1, "{": 1, ")": -1, "]": -1, "}": -1}.get(toks[close].text, 0)
        close += 1
    if close >= len(toks):
        return None
    config = split_top(toks[k + 1:close])
    if len(config) < 2:
        return None
    args: list[list[Token]] = []
    if close + 1 < len(toks) and toks[close + 1].text == "(":
        args = split_top(toks[close + 2:matching_bracket(toks, close + 1, 1)])
    offset = toks[k].offset
    dead = env.dead_branch(offset)

    def fold(part: list[Token]) -> Folded:
        return Folded(None, dead) if dead else env.fold_tokens(part, offset)

    smem_tokens = config[2] if len(config) > 2 else None
    template_parts = split_top(template)
    return LaunchSite(
        kernel=name, line=env.lines.line(toks[name_index].offset), column=env.lines.column(toks[name_index].offset),
        statement_offset=toks[_statement_start(toks, name_index)].offset,
        template_args=[_text(env, t) for t in template_parts],
        template_values=[fold(t) for t in template_parts],
        grid_expr=_text(env, config[0]), block_expr=_text(env, config[1]),
        smem_expr=_text(env, smem_tokens) if smem_tokens else None,
        stream_expr=_text(env, config[3]) if len(config) > 3 else None,
        grid=_as_dim(fold(config[0])), block=_as_dim(fold(config[1])),
        smem=fold(smem_tokens) if smem_tokens else Folded(0),
        args=[_text(env, a) for a in args], arg_values=[fold(a) for a in args], config_offset=offset,
    )


def _as_dim(folded: Folded) -> Folded:
    """A folded grid or block as an (x, y, z) triple of positive sizes."""
    dim = folded.as_dim3()
    if dim is None:
        return folded
    if any(v <= 0 for v in dim):
        return Folded(None, f"folds to {dim}, which is not a valid launch size")
    return Folded(dim, via=folded.via)


_SPECIFIERS = frozenset({"static", "inline", "__forceinline__", "__noinline__", "extern", "__host__",
                         "__device__", "__global__", "void", '"C"', '" "'})


def _is_attribute(name: str) -> bool:
    """`__launch_bounds__(...)`, `__maxnreg__(...)`, `__cluster_dims__(...)`, `alignas(...)`: not a name."""
    return name in ("alignas", "__declspec") or (len(name) > 4 and name.startswith("__") and name.endswith("__"))


def _kernel_definitions(env: ConstEnv) -> list[KernelDefinition]:
    toks = env.tokens
    kernels = []
    for k, tok in enumerate(toks):
        if tok.text != "__global__":
            continue
        j = k + 1
        while j < len(toks) and not (toks[j].kind == "id" and j + 1 < len(toks) and toks[j + 1].text == "("
                                     and not _is_attribute(toks[j].text)):
            if toks[j].text in (";", "{", "}"):
                break
            j += 1 if toks[j].text != "(" else matching_bracket(toks, j, 1) - j + 1
        if j + 1 >= len(toks) or toks[j].kind != "id" or toks[j + 1].text != "(":
            continue
        close = matching_bracket(toks, j + 1, 1)
        after = close + 1
        while after < len(toks) and toks[after].kind == "id":  # noexcept, const, attributes ...
            after += 1
        start, template = _header_start(env, k)
        is_definition = after < len(toks) and toks[after].text == "{"
        kernels.append(KernelDefinition(
            name=toks[j].text, line=env.lines.line(toks[j].offset), start_offset=start,
            name_offset=toks[j].offset, params=_param_names(toks[j + 2:close]), template_params=template,
            is_definition=is_definition, params_end_offset=toks[close].offset if close < len(toks) else -1,
            body_start=toks[after].offset if is_definition else None,
            body_end=env.block_end.get(after) if is_definition else None))
    return kernels


def _header_start(env: ConstEnv, k: int) -> tuple[int, str | None]:
    """Offset where the declaration holding `__global__` (token k) begins, and its template parameters."""
    toks = env.tokens
    j = k
    while j > 0 and toks[j - 1].kind in ("id", "str") and toks[j - 1].text in _SPECIFIERS | {"extern"}:
        j -= 1
    if j > 0 and toks[j - 1].text in (">", ">>"):
        depth = 0
        i = j - 1
        while i >= 0:
            depth += {">": 1, ">>": 2, "<": -1, "<<": -2}.get(toks[i].text, 0)
            if depth <= 0:
                break
            i -= 1
        if i > 0 and toks[i - 1].text == "template":
            return toks[i - 1].offset, _text(env, toks[i + 1:j - 1])
    return toks[j].offset, None


def _param_names(tokens: list[Token]) -> list[str | None]:
    """Names of the parameters in a parameter list (None for an unnamed one); `(void)` has none."""
    names: list[str | None] = []
    for part in split_parameters(tokens):
        cut = next((i for i, t in enumerate(part) if t.text in ("=", "[")), len(part))
        ids = [t for t in part[:cut] if t.kind == "id"]
        is_named = len(ids) >= 2 and ids[-1].text not in _TYPE_LIKE
        names.append(ids[-1].text if is_named else None)
    return names


_TYPE_LIKE = frozenset({"int", "float", "double", "char", "short", "long", "unsigned", "signed", "bool",
                        "const", "volatile", "__restrict__", "restrict", "size_t", "void"})


def _annotations(env: ConstEnv) -> list[Annotation]:
    out = []
    for comment in env.comments:
        m = _ANNOTATION_RE.match(comment.text)
        if m is None:
            continue
        ann = Annotation(line=env.lines.line(comment.start), text=comment.text.strip(), offset=comment.start,
                         end_offset=comment.end)
        _read_annotation(env, ann, m.group(1))
        out.append(ann)
    return out


def _read_annotation(env: ConstEnv, ann: Annotation, body: str) -> None:
    """Fill an annotation's values from `key=value` items; unreadable items go to `errors`."""
    for item in body.split():
        key, sep, value = item.partition("=")
        key = key.strip().lower() if key.strip().lower() in ("grid", "block", "smem", "loops") else key.strip()
        if not sep or not value:
            ann.errors.append(f"'{item}' is not key=value")
            continue
        try:
            if key in ("grid", "block"):
                setattr(ann, key, parse_dim(value))
            elif key in PLACEHOLDER_KEYS and value.endswith("?"):
                setattr(ann, key, parse_count(value[:-1], key))
                ann.placeholders.add(key)
            elif key in ("smem", "loops"):
                setattr(ann, key, parse_count(value, key))
            elif re.fullmatch(r"[A-Za-z_]\w*|\d+", key):
                folded = env.fold(value, ann.offset)
                if folded.as_int() is None:
                    raise ValueError(f"{key}={value}: {folded.reason or 'not an integer'}")
                ann.params[key] = folded.as_int() or 0
            else:
                raise ValueError(f"'{key}' is not a launch field or parameter name")
        except ValueError as exc:
            ann.errors.append(str(exc))


def _attach_annotations(env: ConstEnv, annotations: list[Annotation], sites: list[LaunchSite],
                        kernels: list[KernelDefinition]) -> None:
    """Bind each annotation to the launch or kernel definition that follows it (or shares its line).

    An annotation on a line of its own applies to the next statement if that statement is a launch, or to
    the next declaration if it is a kernel's (its `template` line included). Only comments, blank lines and
    other annotations may stand between; anything else leaves the annotation without a target.
    """
    offsets = [t.offset for t in env.tokens]
    for ann in annotations:
        line_start = env.masked.rfind("\n", 0, ann.offset) + 1
        trailing = env.masked[line_start:ann.offset].strip() != ""
        if trailing:
            site = next((s for s in sites if s.line == ann.line), None)
            kern = next((d for d in kernels if env.lines.line(d.name_offset) == ann.line), None)
        else:
            nxt = next((o for o in offsets if o >= ann.end_offset), None)
            site = next((s for s in sites if s.statement_offset == nxt), None) if nxt is not None else None
            kern = next((d for d in kernels if nxt is not None and d.start_offset <= nxt <= d.name_offset),
                        None)
        if site is not None:
            ann.target, ann.target_name, ann.target_line = "launch", site.kernel, site.line
        elif kern is not None:
            ann.target, ann.target_name, ann.target_line = "kernel", kern.name, kern.line


# ------------------------------------------------------------------------------------------ bodies and arrays

def _function_bodies(env: ConstEnv, kernels: list[KernelDefinition]) -> list[FunctionBody]:
    """Every function definition (kernel or not), as the constant folder found them."""
    kernel_names = {d.name_offset for d in kernels}
    return [FunctionBody(f.name, env.tokens[f.name_index].offset, f.body_start, f.body_end,
                         env.tokens[f.name_index].offset in kernel_names) for f in env.functions]


_NOT_TYPES = frozenset({"return", "case", "delete", "sizeof", "throw", "goto", "else", "do"})


def _arrays(env: ConstEnv, functions: list[FunctionBody]) -> list[ArrayDeclaration]:
    """`T name[...]...` declarations at the start of a statement (a type name right before the name)."""
    toks = env.tokens
    out: list[ArrayDeclaration] = []
    for k in range(1, len(toks) - 1):
        tok = toks[k]
        if tok.kind != "id" or toks[k + 1].text != "[" or toks[k - 1].kind != "id" \
                or toks[k - 1].text in _NOT_TYPES:
            continue
        start = _statement_start(toks, k)
        if start > 0 and toks[start - 1].text not in (";", "{", "}"):
            continue
        dims: list[ArrayDimension] = []
        j = k + 1
        while j < len(toks) and toks[j].text == "[":
            close = matching_bracket(toks, j, 1)
            if close >= len(toks):
                break
            inner_start = toks[j].offset + 1
            dims.append(ArrayDimension(env.source[inner_start:toks[close].offset], inner_start,
                                       toks[close].offset))
            j = close + 1
        if not dims:
            continue
        shared = any(t.text == "__shared__" for t in toks[start:k])
        owner = next((f for f in functions if f.body_start < tok.offset < f.body_end), None)
        out.append(ArrayDeclaration(tok.text, tok.offset, toks[j - 1].offset + 1, dims, shared, owner))
    return out


# ------------------------------------------------------------------------------------------ includes

#: the files whose kernels count: `.cu` fragments and the headers projects define kernels in
_INCLUDED_SUFFIXES = (".cu", ".cuh", ".h", ".hpp", ".hh", ".hxx", ".inl", ".inc")
#: kernel definitions of included `.cu` files and headers, by path and stamp (every kernel's launch inference of
#: a file asks for them; an edited file is read again)
_INCLUDED_KERNELS: BoundedLru[tuple[Path, int, int], list[KernelDefinition]] = BoundedLru(64)


def _kernels_of(target: Path) -> list[KernelDefinition]:
    """The kernels an included file defines (each with its `file`); none when it cannot be read."""
    try:
        stat = target.stat()
    except OSError:
        return []
    key = (real_path(target), stat.st_mtime_ns, stat.st_size)
    found = _INCLUDED_KERNELS.get(key)
    if found is None:
        text = header_text(target)
        if text is None:
            return []
        try:
            found = _kernel_definitions(ConstEnv(text))
        except (ValueError, IndexError, RecursionError):
            return []
        for d in found:
            d.file = str(target)
        _INCLUDED_KERNELS.put(key, found)
    return found


def scan_file(cuda_source: str, path: str | Path | None, include_dirs: list[str] | None = None) -> SourceFacts:
    """`scan_source` with what the file's place adds: the macros of its quoted headers, the calls of its launch
    wrappers in the files beside it, and the kernels of quoted `#include`d `.cu` files and headers (recursively).

    Files are looked up beside the including file, then in `include_dirs`, as nvcc does for quoted
    includes; unreadable ones are skipped (the compiler reports them).
    """
    if path is None:
        return scan_source(cuda_source)
    included = read_included(cuda_source, path, include_dirs)
    facts = scan_source(cuda_source, included.macros)
    if facts.env.asked_other_files:  # a launch wrapper's parameter: its callers may be beside the file
        neighbours = Neighbours.of(path, include_dirs)
        if neighbours.stamps:
            facts = scan_source(cuda_source, included.macros, neighbours)
    found = [d for f in included.files if f.name.endswith(_INCLUDED_SUFFIXES) for d in _kernels_of(f)]
    if not found:
        return facts
    return SourceFacts(facts.env, facts.sites, facts.kernels, facts.annotations, facts.functions, facts.arrays,
                       found)


#: what `scan_file` raises for a source it cannot read; `FileScans` keeps it as it keeps a result
_SCAN_ERRORS = (ValueError, IndexError, RecursionError)


class FileScans:
    """`scan_file`'s results within one analysis, by (text, path, include directories).

    Every kernel's launch inference asks for the facts of the same file, and `scan_file` reaches them through
    the file's headers (each resolved and its stamp read), the folder's sources and the line index of the text:
    work that depends on the file alone. One analysis asks once per file; a later analysis makes its own, so a
    header edited between two saves of the same text is read again. A scan that fails fails again the same way.
    """

    def __init__(self) -> None:
        self._found: dict[tuple[str, str | None, tuple[str, ...]], SourceFacts | Exception] = {}

    def scan(self, cuda_source: str, path: str | Path | None, include_dirs: list[str] | None = None
             ) -> SourceFacts:
        """`scan_file(cuda_source, path, include_dirs)`, made on the first call for these arguments."""
        key = (cuda_source, None if path is None else str(path), tuple(include_dirs or ()))
        found = self._found.get(key)
        if found is None:
            try:
                found = scan_file(cuda_source, path, include_dirs)
            except _SCAN_ERRORS as exc:
                found = exc
            self._found[key] = found
        if isinstance(found, Exception):
            raise found.with_traceback(None)
        return found
