"""Launch configuration: grid, block, dynamic shared memory, parameter values and the default trip count.

A kernel's time depends on how it is launched, which PTX does not say. This module gathers the launch from,
in order of precedence: command-line flags, editor settings, `// kerncast:` annotations, the `<<<>>>` call
site in the same source file, the PTX `.reqntid` directive (block only), and finally a stated default.
Every field is a `Sourced` value that remembers where it came from, and every default or ambiguity becomes
a sentence in `Launch.assumptions`, so that a prediction can always say what it assumed.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from kerncast.analysis.cexpr import ConstEnv, Folded, Token

SOURCES = ("cli", "setting", "annotation", "launch-site", "ptx", "default")

DEFAULT_BLOCK: tuple[int, int, int] = (256, 1, 1)
DEFAULT_GRID: tuple[int, int, int] = (1024, 1, 1)
DEFAULT_LOOPS = 10

Dim = tuple[int, int, int]


@dataclass(frozen=True)
class Sourced:
    """A value and where it came from: one of `SOURCES`, with the line and a human-readable detail."""

    value: Any
    source: str
    line: int | None = None
    detail: str = ""

    def to_json(self) -> dict[str, Any]:
        value = list(self.value) if isinstance(self.value, tuple) else self.value
        return {"value": value, "source": self.source, "line": self.line, "detail": self.detail}


# ------------------------------------------------------------------------------------------ user input


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
    return (values[0], values[1], values[2])


def parse_count(text: str, what: str) -> int:
    """Parse a non-negative integer flag value (`--smem`, `--loops`); ValueError names the flag."""
    value = str(text).strip()
    if not re.fullmatch(r"\d+", value):
        raise ValueError(f"{what} must be a non-negative integer, got {text!r}")
    return int(value)


def parse_param(text: str) -> tuple[str, int]:
    """Parse `NAME=VALUE` (NAME as declared in the source, or a 0-based parameter index)."""
    name, sep, value = str(text).partition("=")
    name, value = name.strip(), value.strip()
    if not sep or not re.fullmatch(r"[A-Za-z_]\w*|\d+", name) or not re.fullmatch(r"-?\d+", value):
        raise ValueError(f"expected NAME=INTEGER (NAME as declared in the kernel, or its 0-based index), "
                         f"got {text!r}")
    return name, int(value)


@dataclass
class LaunchOverrides:
    """Launch values given from outside the source: CLI flags (`source="cli"`) or editor settings."""

    grid: Dim | None = None
    block: Dim | None = None
    smem: int | None = None
    loops: int | None = None
    params: dict[str, int] = field(default_factory=dict)
    source: str = "cli"

    @classmethod
    def from_strings(cls, grid: str | None = None, block: str | None = None, smem: str | int | None = None,
                     loops: str | int | None = None, params: list[str] | None = None,
                     source: str = "cli") -> LaunchOverrides:
        """Build overrides from flag strings; raises ValueError naming the bad flag."""
        def dim(flag: str, text: str | None) -> Dim | None:
            if text is None:
                return None
            try:
                return parse_dim(text)
            except ValueError as exc:
                raise ValueError(f"--{flag}: {exc}") from None
        return cls(
            grid=dim("grid", grid), block=dim("block", block),
            smem=None if smem is None else parse_count(str(smem), "--smem"),
            loops=None if loops is None else parse_count(str(loops), "--loops"),
            params=dict(parse_param(p) for p in params or ()), source=source,
        )


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

    @property
    def base_name(self) -> str:
        return self.name.rsplit("::", 1)[-1]


@dataclass
class Annotation:
    """A `// kerncast: key=value ...` comment and what it applies to.

    `target` is "launch" or "kernel" with `target_name` and `target_line`, or None when no launch or kernel
    definition follows it. Keys it could not read are listed in `errors`, never applied.
    """

    line: int
    text: str
    offset: int
    end_offset: int
    grid: Dim | None = None
    block: Dim | None = None
    smem: int | None = None
    loops: int | None = None
    params: dict[str, int] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    target: str | None = None
    target_name: str | None = None
    target_line: int | None = None


_ANNOTATION_RE = re.compile(r"^(?://|/\*)\s*kerncast\s*:(.*?)(?:\*/)?\s*$", re.S)


@dataclass
class SourceFacts:
    """Everything launch inference reads from one source file, scanned once."""

    env: ConstEnv
    sites: list[LaunchSite]
    kernels: list[KernelDefinition]
    annotations: list[Annotation]


_SCAN_CACHE: dict[str, SourceFacts] = {}
_SCAN_CACHE_SIZE = 4


def scan_source(cuda_source: str) -> SourceFacts:
    """Scan a CUDA source for launch sites, kernel definitions and annotations (with their targets).

    The last few scans are kept, because a file's kernels are inferred one after another from one text.
    """
    cached = _SCAN_CACHE.get(cuda_source)
    if cached is not None:
        return cached
    facts = _scan(cuda_source)
    if len(_SCAN_CACHE) >= _SCAN_CACHE_SIZE:
        _SCAN_CACHE.pop(next(iter(_SCAN_CACHE)))
    _SCAN_CACHE[cuda_source] = facts
    return facts


def _scan(cuda_source: str) -> SourceFacts:
    env = ConstEnv(cuda_source)
    sites = _launch_sites(env)
    kernels = _kernel_definitions(env)
    annotations = _annotations(env)
    _attach_annotations(env, annotations, sites, kernels)
    return SourceFacts(env, sites, kernels, annotations)


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


def _split_top(tokens: list[Token]) -> list[list[Token]]:
    """Split tokens at commas outside (), [] and {}."""
    parts: list[list[Token]] = [[]]
    depth = 0
    for tok in tokens:
        if tok.text in ("(", "[", "{"):
            depth += 1
        elif tok.text in (")", "]", "}"):
            depth -= 1
        elif tok.text == "," and depth == 0:
            parts.append([])
            continue
        parts[-1].append(tok)
    return [] if parts == [[]] else parts


def _group_end(tokens: list[Token], k: int) -> int:
    """Index of the token closing the bracket that opens at k (len(tokens) if unbalanced)."""
    depth = 0
    for j in range(k, len(tokens)):
        if tokens[j].text in ("(", "[", "{"):
            depth += 1
        elif tokens[j].text in (")", "]", "}"):
            depth -= 1
            if depth == 0:
                return j
    return len(tokens)


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
    config = _split_top(toks[k + 1:close])
    if len(config) < 2:
        return None
    args: list[list[Token]] = []
    if close + 1 < len(toks) and toks[close + 1].text == "(":
        args = _split_top(toks[close + 2:_group_end(toks, close + 1)])
    offset = toks[k].offset

    def fold(part: list[Token]) -> Folded:
        return env.fold_tokens(part, offset)

    smem_tokens = config[2] if len(config) > 2 else None
    template_parts = _split_top(template)
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
        args=[_text(env, a) for a in args], arg_values=[fold(a) for a in args],
    )


def _as_dim(folded: Folded) -> Folded:
    """A folded grid or block as an (x, y, z) triple of positive sizes."""
    dim = folded.as_dim3()
    if dim is None:
        return folded
    if any(v <= 0 for v in dim):
        return Folded(None, f"folds to {dim}, which is not a valid launch size")
    return Folded(dim)


_SPECIFIERS = frozenset({"static", "inline", "__forceinline__", "__noinline__", "extern", "__host__",
                         "__device__", "__global__", "void", '"C"', '" "'})


def _kernel_definitions(env: ConstEnv) -> list[KernelDefinition]:
    toks = env.tokens
    kernels = []
    for k, tok in enumerate(toks):
        if tok.text != "__global__":
            continue
        j = k + 1
        while j < len(toks) and not (toks[j].kind == "id" and j + 1 < len(toks) and toks[j + 1].text == "("
                                     and toks[j].text not in ("__launch_bounds__", "__attribute__",
                                                              "__declspec", "alignas")):
            if toks[j].text in (";", "{", "}"):
                break
            j += 1 if toks[j].text != "(" else _group_end(toks, j) - j + 1
        if j + 1 >= len(toks) or toks[j].kind != "id" or toks[j + 1].text != "(":
            continue
        close = _group_end(toks, j + 1)
        after = close + 1
        while after < len(toks) and toks[after].kind == "id":  # noexcept, const, attributes ...
            after += 1
        start, template = _header_start(env, k)
        kernels.append(KernelDefinition(
            name=toks[j].text, line=env.lines.line(toks[j].offset), start_offset=start,
            name_offset=toks[j].offset, params=_param_names(toks[j + 2:close]), template_params=template,
            is_definition=after < len(toks) and toks[after].text == "{"))
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
    parts: list[list[Token]] = [[]]
    depth = 0
    for tok in tokens:
        depth += {"(": 1, "[": 1, "{": 1, "<": 1, ")": -1, "]": -1, "}": -1, ">": -1, ">>": -2}.get(tok.text, 0)
        if tok.text == "," and depth == 0:
            parts.append([])
        else:
            parts[-1].append(tok)
    if parts == [[]] or [t.text for t in parts[0]] == ["void"] and len(parts) == 1:
        return []
    names: list[str | None] = []
    for part in parts:
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


# ------------------------------------------------------------------------------------------ the launch


@dataclass
class Launch:
    """How one kernel is launched, each field with its source, and what was assumed to get there."""

    kernel: str
    grid: Sourced
    block: Sourced
    dynamic_shared_bytes: Sourced
    params: dict[str, Sourced]
    loops: Sourced
    assumptions: list[str] = field(default_factory=list)
    param_names: list[str | None] = field(default_factory=list)

    @property
    def threads_per_block(self) -> int | None:
        return math.prod(self.block.value) if self.block.value is not None else None

    @property
    def blocks(self) -> int | None:
        return math.prod(self.grid.value) if self.grid.value is not None else None

    @property
    def total_threads(self) -> int | None:
        tpb, blocks = self.threads_per_block, self.blocks
        return tpb * blocks if tpb is not None and blocks is not None else None

    def param(self, index: int) -> Sourced | None:
        """The known value of the parameter at a 0-based position (by its name when the name is known)."""
        if 0 <= index < len(self.param_names) and self.param_names[index] in self.params:
            return self.params[self.param_names[index] or ""]
        return self.params.get(str(index))

    def to_json(self) -> dict[str, Any]:
        def dim(s: Sourced) -> list[int] | None:
            return list(s.value) if s.value is not None else None
        fields = {"grid": self.grid, "block": self.block, "dynamic_shared_bytes": self.dynamic_shared_bytes,
                  "loops": self.loops}
        return {
            "kernel": self.kernel,
            "grid": dim(self.grid), "block": dim(self.block),
            "dynamic_shared_bytes": self.dynamic_shared_bytes.value,
            "loops": self.loops.value,
            "source": {**{k: v.source for k, v in fields.items()},
                       "params": {k: v.source for k, v in self.params.items()}},
            "detail": {k: v.detail for k, v in fields.items() if v.detail},
            "params": {k: v.value for k, v in self.params.items()},
            "assumptions": list(self.assumptions),
        }


def split_kernel_name(display_name: str) -> tuple[str, list[str] | None]:
    """`void ns::k<32, float>(float*)` -> ("k", ["32", "float"]); no template arguments -> None."""
    text = display_name.strip()
    depth = 0
    for i, ch in enumerate(text):  # drop a parameter list: the first '(' outside template brackets
        depth += {"<": 1, ">": -1}.get(ch, 0)
        if ch == "(" and depth == 0 and i > 0:
            text = text[:i]
            break
    args = None
    if text.endswith(">") and "<" in text:
        open_at = _template_open(text)
        args = _split_template_args(text[open_at + 1:-1])
        text = text[:open_at]
    base = text.split()[-1] if text.split() else text
    return base.rsplit("::", 1)[-1], args


def _template_open(text: str) -> int:
    depth = 0
    for i in range(len(text) - 1, -1, -1):
        depth += {">": 1, "<": -1}.get(text[i], 0)
        if depth == 0:
            return i
    return text.index("<")


def _split_template_args(text: str) -> list[str]:
    out, depth, cur = [], 0, ""
    for ch in text:
        depth += {"<": 1, "(": 1, ">": -1, ")": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    return [*out, cur.strip()] if cur.strip() or out else []


def _normal_template_arg(text: str) -> str:
    """Demangled template arguments read `32`, `32u`, `(int)32`, `true`: normalise for comparison."""
    t = re.sub(r"^\((?:[\w ]+)\)", "", text.strip())
    t = re.sub(r"(?<=\d)[uUlL]+$", "", t)
    return {"true": "1", "false": "0"}.get(t, re.sub(r"\s+", " ", t))


def _site_matches_template(site: LaunchSite, wanted: list[str]) -> bool | None:
    """True/False when the site's template arguments can be compared with the wanted ones, else None."""
    if len(site.template_args) != len(wanted):
        return False if site.template_args else None
    for raw, folded, want in zip(site.template_args, site.template_values, wanted, strict=True):
        mine = str(folded.value) if folded.as_int() is not None else re.sub(r"\s+", " ", raw)
        if not folded.known and re.fullmatch(r"-?\d+", _normal_template_arg(want)):
            return None
        if mine != _normal_template_arg(want):
            return False
    return True


def _choose_site(kernel_name: str, facts: SourceFacts | None, assumptions: list[str]) -> LaunchSite | None:
    """The launch site of the kernel: by base name, then by template arguments when they can be compared."""
    if facts is None:
        return None
    base, targs = split_kernel_name(kernel_name)
    sites = [s for s in facts.sites if s.base_name == base]
    if targs is not None and sites:
        verdicts = [_site_matches_template(s, targs) for s in sites]
        exact = [s for s, v in zip(sites, verdicts, strict=True) if v]
        candidates = exact or [s for s, v in zip(sites, verdicts, strict=True) if v is None]
        if not candidates:
            seen = "; ".join(f"<{', '.join(s.template_args)}> at line {s.line}" for s in sites)
            assumptions.append(f"{base} is launched in this file only with other template arguments ({seen}), "
                               f"not as <{', '.join(targs)}>; those launches are not used")
        elif not exact:
            assumptions.append(f"the template arguments of the launch of {base} at line {candidates[0].line} "
                               f"could not be folded; assumed it launches <{', '.join(targs)}>")
        sites = candidates
    if not sites:
        return None
    first = sites[0]
    for other in sites[1:]:
        if not other.same_config(first):
            assumptions.append(f"{base} is also launched at line {other.line} with {other.config_text}; "
                               f"using the launch at line {first.line} ({first.config_text})")
    return first


def _merged_annotation(annotations: list[Annotation], target: str, line: int | None) -> list[Annotation]:
    return [a for a in annotations if a.target == target and a.target_line == line and line is not None]


def infer_launch(kernel_name: str, cuda_source: str | None, overrides: LaunchOverrides | None = None,
                 settings: LaunchOverrides | None = None, kernel_params: list[str] | None = None,
                 reqntid: tuple[int, ...] | None = None, default_block: Dim | None = DEFAULT_BLOCK,
                 default_grid: Dim | None = DEFAULT_GRID, default_loops: int = DEFAULT_LOOPS) -> Launch:
    """The launch of `kernel_name` (its demangled display name), each field from the best source there is.

    Precedence per field: CLI overrides > settings > an annotation above the launch > an annotation above
    the kernel definition > the `<<<>>>` site in the same file > PTX `.reqntid` (block only) > the default.
    An annotation above the launch wins over one above the kernel because it is the more specific of the
    two. Never raises: a source that cannot be scanned is recorded as an assumption and the defaults apply.
    """
    assumptions: list[str] = []
    facts = None
    if cuda_source:
        try:
            facts = scan_source(cuda_source)
        except (ValueError, IndexError, RecursionError) as exc:
            assumptions.append(f"the CUDA source could not be scanned for launches ({exc})")
    site = _choose_site(kernel_name, facts, assumptions)
    base, _ = split_kernel_name(kernel_name)
    kdef = next((d for d in facts.kernels if d.base_name == base and d.is_definition), None) if facts else None
    kdef = kdef or (next((d for d in facts.kernels if d.base_name == base), None) if facts else None)
    names: list[str | None] = list(kernel_params) if kernel_params is not None else \
        (list(kdef.params) if kdef else [])
    annotations = facts.annotations if facts else []
    layers = _layers(overrides, settings, _merged_annotation(annotations, "launch", site.line if site else None),
                     _merged_annotation(annotations, "kernel", kdef.line if kdef else None), site, assumptions)
    grid = _pick("grid", layers, assumptions) or _default(
        "grid", default_grid, assumptions, "blocks", "--grid or a // kerncast: grid=... annotation")
    block = _pick("block", layers, assumptions)
    if block is None and reqntid:
        dims = tuple(reqntid) + (1,) * (3 - len(reqntid))
        block = Sourced(dims[:3], "ptx", None, ".reqntid directive")
    block = block or _default("block", default_block, assumptions, "threads per block",
                              "--block or a // kerncast: block=... annotation")
    smem = _pick("smem", layers, assumptions) or _default(
        "smem", 0, assumptions, "bytes of dynamic shared memory", "--smem or a // kerncast: smem=... annotation")
    loops = _pick("loops", layers, assumptions) or Sourced(default_loops, "default", None,
                                                           "default trip count for loops of unknown count")
    params = _params(layers, names, kernel_name, assumptions)
    return Launch(kernel=kernel_name, grid=grid, block=block, dynamic_shared_bytes=smem, params=params,
                  loops=loops, assumptions=assumptions, param_names=names)


@dataclass
class _Layer:
    """One source of launch values, ready for `_pick`: values by field, the source name and a detail."""

    source: str
    values: dict[str, Any]
    unknown: dict[str, str]
    params: dict[str, int]
    line: int | None
    detail: str


def _layers(overrides: LaunchOverrides | None, settings: LaunchOverrides | None,
            launch_anns: list[Annotation], kernel_anns: list[Annotation], site: LaunchSite | None,
            assumptions: list[str]) -> list[_Layer]:
    layers = []
    for ov, name in ((overrides, "cli"), (settings, "setting")):
        if ov is not None:
            src = ov.source if ov.source in SOURCES else name
            label = "command line" if src == "cli" else "settings"
            layers.append(_Layer(src, {"grid": ov.grid, "block": ov.block, "smem": ov.smem, "loops": ov.loops},
                                 {}, dict(ov.params), None, f"from the {label}"))
    for anns, where in ((launch_anns, "above the launch"), (kernel_anns, "above the kernel")):
        for ann in reversed(anns):  # the annotation nearest the target wins
            for err in ann.errors:
                assumptions.append(f"ignored part of the annotation at line {ann.line}: {err}")
            layers.append(_Layer("annotation", {"grid": ann.grid, "block": ann.block, "smem": ann.smem,
                                                "loops": ann.loops}, {}, dict(ann.params), ann.line,
                                 f"// kerncast: annotation at line {ann.line} ({where})"))
    if site is not None:
        values, unknown = {}, {}
        for key, folded, expr in (("grid", site.grid, site.grid_expr), ("block", site.block, site.block_expr),
                                  ("smem", site.smem, site.smem_expr or "0")):
            if folded.known:
                values[key] = folded.as_dim3() if key != "smem" else folded.as_int()
            else:
                unknown[key] = f"`{expr}` at line {site.line} could not be folded: {folded.reason}"
        params = {str(i): f.as_int() for i, f in enumerate(site.arg_values) if f.as_int() is not None}
        layers.append(_Layer("launch-site", values, unknown, params, site.line,  # type: ignore[arg-type]
                             f"{site.config_text} at line {site.line}"))
    return layers


def _pick(key: str, layers: list[_Layer], assumptions: list[str]) -> Sourced | None:
    """The value of a field from the first layer that has it; unfoldable launch values become assumptions."""
    for layer in layers:
        if layer.values.get(key) is not None:
            return Sourced(layer.values[key], layer.source, layer.line, layer.detail)
        if key in layer.unknown:
            assumptions.append(f"{key}: {layer.unknown[key]}")
    return None


def _default(key: str, value: Any, assumptions: list[str], unit: str, how: str) -> Sourced:
    """A default value, and the assumption sentence that says it was assumed and how to set it."""
    if value is None:
        assumptions.append(f"{key}: unknown (no launch found; set it with {how})")
        return Sourced(None, "default", None, "unknown")
    shown = "×".join(str(v) for v in value) if isinstance(value, tuple) else str(value)
    assumptions.append(f"{key}: no value found; assumed {shown} {unit} (default; set it with {how})")
    return Sourced(value, "default", None, "default")


def _params(layers: list[_Layer], names: list[str | None], kernel: str,
            assumptions: list[str]) -> dict[str, Sourced]:
    """Parameter values by name (by index text when the name is unknown); the first layer wins."""
    out: dict[str, Sourced] = {}
    for layer in layers:
        for key, value in layer.params.items():
            name = _param_key(key, names)
            if name is None:
                if layer.source != "launch-site":
                    known = ", ".join(n for n in names if n) or "none known"
                    assumptions.append(f"ignored {layer.source} value for '{key}': not a parameter of {kernel} "
                                       f"(parameters: {known})")
                continue
            if not names and not key.isdigit():
                assumptions.append(f"the parameter names of {kernel} are not known (no CUDA source); "
                                   f"'{key}' is kept by name, give its 0-based index to apply it to the PTX")
            if name not in out:
                out[name] = Sourced(value, layer.source, layer.line, layer.detail)
    return out


def _param_key(key: str, names: list[str | None]) -> str | None:
    """Map a parameter given by name or 0-based index to the key used in `Launch.params`."""
    if key.isdigit():
        index = int(key)
        if names and index >= len(names):
            return None
        return names[index] or key if index < len(names) else key
    if names and key not in names:
        return None
    return key
