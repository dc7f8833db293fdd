"""A hand-written recursive-descent parser for the PTX that nvcc emits (PTX ISA 7.x-9.x).

The methods read like the grammar: `module -> { directive | variable | function }`,
`function -> linkage? (.entry | .func) returns? name params performance-directives* (body | ;)`,
`body -> { statement }`, `statement -> label ':' | declaration ';' | .loc ... | guard? opcode modifiers operands ';'`.
Unknown directives are skipped, unknown opcodes kept. Every failure is a `PtxSyntaxError` with a position;
`parse_ptx` turns any internal surprise into one as well, so nothing else escapes. A syntax error inside a
function costs only that function: it is recorded in `Module.errors` and parsing resumes at the next
module-scope directive, so one odd construct never hides the other kernels of a file.

Lines the lexer read whole (`lexer.LineToken`: a plain instruction, `.loc` or register range) are built
directly from their match where a statement starts (`line_instruction`, `loc_directive`, `declaration`); any
other reader that advances over one gets its tokens back first (`split_line`), as if it had been lexed token
by token.
"""

from __future__ import annotations

import re
import struct

from kerncast.analysis.ptx.errors import PtxSyntaxError
from kerncast.analysis.ptx.lexer import (
    OPERAND_RE,
    InstructionLine,
    LineToken,
    LocLine,
    RegLine,
    Token,
    line_tokens,
    tokenize,
)
from kerncast.analysis.ptx.model import (
    PREDEFINED_CONSTANTS,
    TYPE_BYTES,
    Addr,
    Function,
    FunctionError,
    Guard,
    Imm,
    Instruction,
    Module,
    Operand,
    Param,
    PredPair,
    Reg,
    SourceLoc,
    Sym,
    VarDecl,
    Vec,
)
from kerncast.analysis.ptx.reuse import FunctionReuse, Span, function_spans, moved_function, moved_key

#: the commas (and blanks) between the items of a `{a, b}` operand of an instruction line
_ITEM_SPLIT_RE = re.compile(r"[ \t\r\f\v]*,[ \t\r\f\v]*")
_STATE_SPACES = frozenset({".reg", ".shared", ".local", ".const", ".global", ".param", ".tex", ".sreg"})
_LINKAGE = frozenset({".visible", ".extern", ".weak", ".common"})
_PERF_DIRECTIVES = frozenset({
    ".maxntid", ".reqntid", ".minnctapersm", ".maxnctapersm", ".maxnreg", ".reqnctapercluster",
    ".maxclusterrank", ".explicitcluster", ".noreturn", ".blocksareclusters",
})
_VAR_TYPES = frozenset({f".{t}" for t in TYPE_BYTES} | {".texref", ".samplerref", ".surfref"})
_MAX_TOKENS = 50_000_000
#: Directives that start a module-scope statement in nvcc's layout (column 1): where parsing resumes after an
#: error inside a function.
_RESYNC = frozenset({".visible", ".weak", ".extern", ".entry", ".func", ".global", ".const", ".shared", ".file",
                     ".section", ".alias", ".common"})
#: operand groups (`{...}`, `(...)`) nest this deep at most; real PTX nests one level
_MAX_NESTING = 64
#: an array dimension above this (2^40 elements) describes no memory a GPU has
_MAX_DIM = 1 << 40


class _Parser:
    def __init__(self, text: str, reuse: FunctionReuse | None = None, path: str | None = None) -> None:
        self.lines = text.split("\n")
        self.reuse = reuse
        #: module-scope functions found by the scan, by first line (only with `reuse`)
        self.spans: dict[int, Span] = function_spans(text, self.lines, path) if reuse is not None else {}
        #: the earlier functions that stand in for the text the lexer skipped, and the functions parsed now
        self.kept: dict[str, Function] = {}
        self.fresh: list[tuple[str, Function]] = []
        #: per function's first line, its moved key and files' first lines (see reuse.py), made when needed
        self.moved_keys: dict[int, tuple[str, dict[str, int]] | None] = {}
        #: of `kept`, the functions copied from an earlier one that had only moved in the source
        self.moved: list[tuple[str, Function]] = []
        #: each such copy with the function it was copied from
        self.origins: list[tuple[Function, Function]] = []
        if reuse is not None:
            self.take_reused(reuse, path)
        skip = {s.first: (s.last, s.key) for s in self.spans.values() if s.key in self.kept}
        self.toks: list[Token] = tokenize(text, skip, instructions=True)
        self.i = 0
        self.tok: Token = self.toks[0]
        self.files: dict[int, str] = {}
        self.loc: SourceLoc | None = None
        self.loc_file: int | None = None
        self.errors: list[FunctionError] = []
        self.function_name: str | None = None
        self.reg_names: set[str] = set()
        self.nesting = 0
        #: operands and guards of instruction lines by their text, shared (they are immutable; see
        #: `line_operand`)
        self.shared: dict[str, Operand] = {}
        self.guards: dict[str, Guard] = {}

    def take_reused(self, reuse: FunctionReuse, path: str | None) -> None:
        """The functions whose text was parsed before (`kept`), and those whose text differs from an earlier one
        only by the source lines of its `.loc` directives, copied with their lines moved (`moved`)."""
        for span in self.spans.values():
            fn = reuse.get(span.key)
            if fn is None:
                found = self.moved_key(span, path)
                earlier = reuse.get_moved(found[0]) if found is not None else None
                if found is not None and earlier is not None:
                    deltas = _deltas_by_name(earlier[1], found[1], earlier[2])
                    if deltas is not None:
                        fn = moved_function(earlier[0], deltas)
                        self.moved.append((span.key, fn))
                        self.origins.append((fn, earlier[0]))
            if fn is not None:
                self.kept[span.key] = fn

    def moved_key(self, span: Span, path: str | None) -> tuple[str, dict[str, int]] | None:
        """The moved key of the function at `span` and its files' first lines (reuse.py), made once."""
        if span.first not in self.moved_keys:
            body = "\n".join(self.lines[span.first - 1:span.last])
            self.moved_keys[span.first] = moved_key(path, span.files, span.first, body)
        return self.moved_keys[span.first]

    # ------------------------------------------------------------------ token helpers
    def seek(self, i: int) -> None:
        self.i = i
        self.tok = self.toks[i]

    def peek(self, k: int = 1) -> Token:
        j = min(self.i + k, len(self.toks) - 1)
        return self.toks[j]

    def advance(self) -> Token:
        t = self.tok
        if t.kind != "eof":
            if type(t) is not Token:  # a line read whole, taken token by token here
                t = self.split_line()
            self.i += 1
            self.tok = self.toks[self.i]
        return t

    def split_line(self) -> Token:
        """Put the current `LineToken`'s tokens in its place and return the first: a reader other than its fast
        path (error recovery, a construct running on past its line) takes it token by token, as it would have
        without the fast path."""
        assert isinstance(self.tok, LineToken)
        plain = line_tokens(self.tok)
        self.toks[self.i:self.i + 1] = plain
        self.tok = plain[0]
        return self.tok

    def error(self, message: str, tok: Token | None = None) -> PtxSyntaxError:
        t = tok or self.tok
        found = "end of file" if t.kind == "eof" else repr(t.text)
        return PtxSyntaxError(f"{message} (found {found})", t.line, t.column)

    def expect(self, text: str) -> Token:
        if self.tok.text != text or self.tok.kind == "string":
            raise self.error(f"expected {text!r}")
        return self.advance()

    def accept(self, text: str) -> bool:
        if self.tok.text == text and self.tok.kind != "string":
            self.advance()
            return True
        return False

    def expect_kind(self, kind: str, what: str) -> Token:
        if self.tok.kind != kind:
            raise self.error(f"expected {what}")
        return self.advance()

    def expect_int(self) -> int:
        neg = self.accept("-")
        t = self.expect_kind("int", "an integer")
        v = _int_value(t.text)
        return -v if neg else v

    def skip_statement(self) -> None:
        """Skip to the end of the current statement: a ';' or, for ';'-less directives, the line end."""
        line = self.tok.line
        while self.tok.kind != "eof":
            if self.tok.text == ";":
                self.advance()
                return
            if self.tok.line != line or self.tok.text in ("{", "}"):
                return
            self.advance()

    def skip_line(self) -> None:
        """Skip every token left on the current line."""
        line = self.tok.line
        while self.tok.kind != "eof" and self.tok.line == line:
            self.advance()

    def skip_balanced(self, open_: str, close: str) -> None:
        """Skip a bracketed group, nested ones included (debug sections, attribute lists)."""
        self.expect(open_)
        depth = 1
        while depth:
            t = self.advance()
            if t.kind == "eof":
                raise self.error(f"unterminated {open_!r}", t)
            if t.kind == "punct":
                depth += 1 if t.text == open_ else -1 if t.text == close else 0

    # ------------------------------------------------------------------ module
    def module(self) -> Module:
        version: str | None = None
        target: tuple[str, ...] = ()
        address_size = 64
        globals_: list[VarDecl] = []
        functions: list[Function] = []
        while self.tok.kind != "eof":
            t = self.tok
            if t.kind == "reused":
                functions.append(self.kept[t.text])
                self.advance()
                continue
            if t.kind != "dir":
                if t.text == ";":
                    self.advance()
                    continue
                if t.text == "@" and self.peek().text == "@" and self.peek(2).text == "DWARF":
                    self.skip_line()  # old nvcc's `@@DWARF .byte ...` debug lines
                    continue
                raise self.error("expected a directive at module scope")
            if t.text == ".version":
                self.advance()
                v = self.advance()
                if v.kind not in ("float", "int"):
                    raise self.error("expected a version number after .version", v)
                version = v.text
            elif t.text == ".target":
                self.advance()
                target = self.name_list()
            elif t.text == ".address_size":
                self.advance()
                address_size = self.expect_int()
            elif t.text == ".file":
                self.file_directive()
            elif t.text == ".loc":
                self.loc_directive()
            elif t.text == ".section":
                self.advance()
                self.advance()
                if self.tok.text == "{":
                    self.skip_balanced("{", "}")
                else:
                    self.skip_line()  # `.section .debug_info, "", @progbits`
            elif t.text in (".pragma", ".alias"):
                self.skip_statement()
            else:
                start = self.i
                linkage = None
                while self.tok.text in _LINKAGE:
                    linkage = self.advance().text[1:]
                if self.tok.text in (".entry", ".func"):
                    fn = self.recovering_function(linkage, t.line)
                    if fn is not None:
                        functions.append(fn)
                        self.note_fresh(fn, t)
                elif self.tok.text in _STATE_SPACES:
                    globals_.extend(self.declaration(linkage == "extern", module_scope=True))
                else:
                    self.seek(start)
                    self.advance()
                    self.skip_statement()
        return Module(version, target, address_size, dict(self.files), globals_, functions)

    def note_fresh(self, fn: Function, first: Token) -> None:
        """Remember a function parsed now for reuse when it began and ended exactly where the scan says."""
        span = self.spans.get(first.line)
        if span is None or self.toks[self.i - 1].line != span.last or \
                (self.tok.kind != "eof" and self.tok.line <= span.last):
            return
        self.fresh.append((span.key, fn))

    def name_list(self) -> tuple[str, ...]:
        names = [self.expect_kind("ident", "a name").text]
        while self.accept(","):
            names.append(self.expect_kind("ident", "a name").text)
        return tuple(names)

    def file_directive(self) -> None:
        self.advance()
        idx = self.expect_int()
        name = self.expect_kind("string", "a file name")
        self.files[idx] = _unquote(name.text)
        while self.accept(","):
            self.advance()

    def loc_directive(self) -> None:
        """`.loc file line column [, function_name label[+off], inlined_at file line col]`."""
        t = self.tok
        if type(t) is LocLine:  # the fast path: three numbers and nothing after them on the line
            file_text, line_text, col_text = t.match.group("file", "line", "column")
            file_idx, line, col = _int_value(file_text), _int_value(line_text), _int_value(col_text)
            self.i += 1
            self.tok = self.toks[self.i]
            self.loc_file = file_idx
            self.loc = SourceLoc(str(file_idx), line, col) if line > 0 else None
            return
        self.advance()
        file_idx = self.expect_int()
        line = self.expect_int()
        col = self.expect_int()
        t = self.tok
        inlined_at = None
        while self.tok.text == "," and self.tok.line == t.line:
            self.advance()
            if self.tok.text == "inlined_at" and self.peek().kind == "int":
                self.advance()
                where = [int(self.advance().text) for _ in range(3) if self.tok.kind == "int"]
                if len(where) == 3 and where[1] > 0:
                    inlined_at = SourceLoc(str(where[0]), where[1], where[2])
            while self.tok.kind != "eof" and self.tok.line == t.line and self.tok.text != ",":
                self.advance()
        self.loc_file = file_idx
        self.loc = SourceLoc(str(file_idx), line, col, inlined_at) if line > 0 else None

    # ------------------------------------------------------------------ functions
    def recovering_function(self, linkage: str | None, start_line: int) -> Function | None:
        """A function, or None after recording its syntax error and skipping to the next module statement."""
        self.function_name = None
        try:
            return self.function(linkage, start_line)
        except PtxSyntaxError as exc:
            self.errors.append(FunctionError(self.function_name, start_line, exc.line, exc.column, exc.message))
            self.resync()
            return None

    def resync(self) -> None:
        """Skip to the next module-scope directive at the start of a line, a function kept from an earlier
        parse, or the end of the file."""
        self.advance()
        while self.tok.kind not in ("eof", "reused") and not (self.tok.column == 1 and self.tok.text in _RESYNC):
            self.advance()

    def function(self, linkage: str | None, start_line: int) -> Function:
        kind = self.advance().text[1:]
        while self.tok.kind == "dir" and self.tok.text not in _STATE_SPACES:
            self.advance()  # .attribute-like prefixes; .attribute(...) handled below
            if self.tok.text == "(":
                self.skip_balanced("(", ")")
        returns: list[Param] = []
        if self.tok.text == "(":
            returns = self.param_list()
        name = self.expect_kind("ident", "a function name").text
        self.function_name = name
        self.reg_names = set()
        params: list[Param] = []
        if self.tok.text == "(":
            params = self.param_list()
        directives: dict[str, tuple[int, ...]] = {}
        pragmas: list[str] = []
        while self.tok.kind == "dir":
            d = self.advance().text
            if d == ".pragma":
                pragmas.append(_unquote(self.expect_kind("string", "a pragma string").text))
                self.accept(";")
                continue
            values: list[int] = []
            if self.tok.kind == "int":
                values.append(self.expect_int())
                while self.accept(","):
                    values.append(self.expect_int())
            directives[d[1:]] = tuple(values)
            if d not in _PERF_DIRECTIVES:
                self.skip_statement()
        fn = Function(name, kind, params, returns, [], [], {}, directives, pragmas, start_line, linkage)
        if self.accept(";"):
            fn.has_body = False
            return fn
        self.loc = None
        self.expect("{")
        self.body(fn)
        return fn

    def param_list(self) -> list[Param]:
        self.expect("(")
        params: list[Param] = []
        if self.accept(")"):
            return params
        while True:
            params.append(self.param())
            if self.accept(")"):
                return params
            self.expect(",")

    def param(self) -> Param:
        if self.tok.text not in (".param", ".reg"):
            raise self.error("expected .param or .reg in a parameter list")
        self.advance()
        ptype = ""
        align = None
        ptr_space = None
        while self.tok.kind == "dir":
            d = self.advance().text
            if d == ".align":
                align = self.expect_int()
            elif d in _VAR_TYPES:
                ptype = d[1:]
            elif d in (".global", ".shared", ".const", ".local"):
                ptr_space = d[1:]
        name = self.expect_kind("ident", "a parameter name").text
        dims = self.array_dims()
        return Param(name, ptype, align, dims, ptr_space)

    def array_dims(self) -> tuple[int, ...]:
        dims: list[int] = []
        while self.tok.text == "[":
            self.advance()
            if self.accept("]"):
                dims.append(0)
                continue
            start = self.tok
            size = self.expect_int()
            if not 0 <= size <= _MAX_DIM:
                raise self.error(f"array size {size} out of range (0 to 2^40)", start)
            dims.append(size)
            self.expect("]")
        return tuple(dims)

    # ------------------------------------------------------------------ declarations
    def declaration(self, extern: bool, module_scope: bool = False) -> list[VarDecl]:
        """`.space [.align n] [.vN] .type name[<count>][dims] [= init] {, name...} ;`."""
        t = self.tok
        if type(t) is RegLine:  # the fast path: `.reg .type %name<count>;` alone on its line
            vtype, name, count_text = t.match.group("type", "name", "count")
            count = _int_value(count_text)
            if f".{vtype}" in _VAR_TYPES and 0 <= count <= _MAX_DIM:
                self.i += 1
                self.tok = self.toks[self.i]
                return [VarDecl(name, "reg", vtype, None, (), count, extern, t.line, None)]
            # otherwise the token path reports the error where it finds it
        space_tok = self.advance()
        space = space_tok.text[1:]
        align = None
        vtype = ""
        vec = 1
        attributes: tuple[str, ...] = ()
        while self.tok.kind == "dir":
            d = self.advance().text
            if d == ".align":
                align = self.expect_int()
            elif d == ".attribute" and self.tok.text == "(":
                attributes += self.attribute_list()
            elif d in (".v2", ".v4", ".v8"):
                vec = int(d[2])
            elif d in _VAR_TYPES:
                vtype = d[1:]
            elif d == ".ptr":
                continue
        if not vtype:
            raise self.error("expected a type in a declaration", space_tok)
        decls: list[VarDecl] = []
        while True:
            name_tok = self.expect_kind("ident", "a variable name")
            count = 1
            if self.tok.text == "<":
                self.advance()
                start = self.tok
                count = self.expect_int()
                if not 0 <= count <= _MAX_DIM:
                    raise self.error(f"variable count {count} out of range (0 to 2^40)", start)
                self.expect(">")
            dims = self.array_dims()
            if vec > 1:
                dims = (*dims, vec) if dims else (vec,)
            init = None
            if self.accept("="):
                init = self.initializer()
            decls.append(VarDecl(name_tok.text, space, vtype, align, dims, count, extern, name_tok.line, init,
                                 attributes))
            if space == "reg" and not name_tok.text.startswith("%"):
                self.reg_names.add(name_tok.text)
            if not self.accept(","):
                break
        self.expect(";")
        return decls

    def attribute_list(self) -> tuple[str, ...]:
        """The names in a variable's `.attribute(...)`: `.managed` for a `__managed__` variable, `.unified(uuid)`
        for one shared with the host. Arguments of an attribute are skipped: nothing reads them."""
        self.expect("(")
        names: list[str] = []
        while not self.accept(")"):
            t = self.advance()
            if t.kind == "dir":
                names.append(t.text[1:])
                if self.tok.text == "(":
                    self.skip_balanced("(", ")")
            elif t.kind == "eof" or t.text == ";":
                raise self.error("unterminated '.attribute('", t)
            elif t.text != ",":
                raise self.error("expected an attribute name such as .managed", t)
        return tuple(names)

    def initializer(self) -> str:
        parts: list[str] = []
        depth = 0
        while self.tok.kind != "eof":
            if depth == 0 and self.tok.text in (";", ","):
                break
            t = self.advance()
            depth += {"{": 1, "}": -1}.get(t.text, 0) if t.kind == "punct" else 0
            parts.append(t.text)
        return " ".join(parts)

    # ------------------------------------------------------------------ bodies
    def body(self, fn: Function) -> None:
        """Statements up to the matching '}' (nested scopes are flattened)."""
        depth = 1
        while True:
            t = self.tok
            if type(t) is InstructionLine:  # the fast path: one plain instruction on a line of its own
                fn.body.append(self.line_instruction(t, len(fn.body)))
                self.i += 1
                self.tok = self.toks[self.i]
                continue
            if t.kind == "eof":
                raise self.error(f"missing '}}' at the end of {fn.name}", t)
            if t.text == "}" and t.kind == "punct":
                self.advance()
                depth -= 1
                if depth == 0:
                    return
            elif t.text == "{" and t.kind == "punct":
                self.advance()
                depth += 1
            elif t.text == ";" and t.kind == "punct":
                self.advance()
            elif t.kind == "dir":
                self.body_directive(fn)
            elif t.kind == "ident" and self.peek().text == ":" and not t.text.startswith("%"):
                self.advance()
                self.advance()
                if self.tok.text == ".callprototype":
                    self.skip_statement()
                    continue
                fn.labels[t.text] = len(fn.body)
            else:
                fn.body.append(self.instruction(len(fn.body)))

    def body_directive(self, fn: Function) -> None:
        t = self.tok
        if t.text == ".loc":
            self.loc_directive()
        elif t.text in _STATE_SPACES:
            fn.decls.extend(self.declaration(extern=False))
        elif t.text in _LINKAGE and self.peek().text in _STATE_SPACES:
            extern = t.text == ".extern"
            self.advance()
            fn.decls.extend(self.declaration(extern=extern))
        elif t.text == ".pragma":
            self.advance()
            if self.tok.kind == "string":
                fn.pragmas.append(_unquote(self.advance().text))
            self.accept(";")
        elif t.text == ".file":
            self.file_directive()
        else:
            self.advance()
            self.skip_statement()

    def instruction(self, index: int) -> Instruction:
        start = self.tok
        guard = None
        if self.accept("@"):
            neg = self.accept("!")
            g = self.expect_kind("ident", "a predicate register after '@'")
            guard = Guard(g.text, neg)
        op = self.tok
        if op.kind != "ident" or op.text.startswith(("%", "$")):
            raise self.error("expected an instruction opcode")
        self.advance()
        mods: list[str] = []
        while self.tok.kind == "dir" and self.tok.glued:
            mods.append(self.advance().text[1:])
        if self.tok.kind == "float" and self.tok.glued and self.tok.text.startswith("."):
            raise self.error("malformed opcode modifier")
        operands: list[Operand] = []
        if self.tok.text != ";":
            operands.append(self.operand())
            while self.accept(","):
                operands.append(self.operand())
        self.expect(";")
        text = self.lines[start.line - 1].strip() if start.line - 1 < len(self.lines) else ""
        return Instruction(op.text, tuple(mods), tuple(operands), guard, start.line, start.column,
                           self.loc, index, text)

    def line_instruction(self, t: InstructionLine, index: int) -> Instruction:
        """The instruction of an `InstructionLine`: what `instruction` makes of the same tokens, read from the
        line's match (the line's grammar admits only operands whose tokens `operand` reads one way)."""
        guarded, neg, pred, opcode, mods, text = t.match.groups()
        guard = None
        if guarded is not None:
            guard = self.guards.get(guarded)
            if guard is None:
                guard = self.guards[guarded] = Guard(pred, neg == "!")
        operands = tuple(map(self.line_operand, OPERAND_RE.finditer(text))) if text else ()
        line = self.lines[t.line - 1].strip() if t.line - 1 < len(self.lines) else ""
        return Instruction(opcode, tuple(mods[1:].split(".")) if mods else (), operands, guard, t.line, t.column,
                           self.loc, index, line)

    def line_operand(self, m: re.Match[str]) -> Operand:
        """One operand of an instruction line, as `operand` reads its tokens.

        Operands are immutable, so one object stands for every use of the same text in the file (registers
        and immediates repeat from line to line); a name's operand depends on the `.reg` names in scope and is
        made each time."""
        text = m.group()
        found = self.shared.get(text)
        if found is not None:
            return found
        kind = m.lastgroup
        if kind == "name":
            return self.name_value(text)
        if kind == "reg":
            op: Operand = Reg(text)
        elif kind == "int" or kind == "float":
            value = _int_value if kind == "int" else _float_value
            op = Imm(-value(text[1:]), text) if text[0] == "-" else Imm(value(text), text)
        elif kind == "items":
            items = _ITEM_SPLIT_RE.split(m.group("items"))
            op = Vec(tuple(Reg(item) if item[0] == "%" else self.line_name(item) for item in items))
            if any(item[0] != "%" for item in items):
                return op
        else:
            base = m.group("base")
            offset = 0
            if m.group("sign") is not None:
                value_text = m.group("offset")
                amount = -_int_value(value_text[1:]) if value_text[0] == "-" else _int_value(value_text)
                offset = -amount if m.group("sign") == "-" else amount
            if base[0] != "%":
                return Addr(self.line_name(base), offset)
            op = Addr(Reg(base), offset)
        self.shared[text] = op
        return op

    def line_name(self, name: str) -> Reg | Sym:
        """A name operand: a register declared without `%` (inline assembly) or a symbol."""
        return Reg(name) if name in self.reg_names else Sym(name)

    def name_value(self, name: str) -> Reg | Sym | Imm:
        """A name read as a value: also a predefined constant (`warpSize` is `WARP_SZ`, a number, not the
        address of a variable)."""
        if name in PREDEFINED_CONSTANTS and name not in self.reg_names:
            return Imm(PREDEFINED_CONSTANTS[name], name)
        return self.line_name(name)

    # ------------------------------------------------------------------ operands
    def operand(self) -> Operand:
        t = self.tok
        if t.text == "[" and t.kind == "punct":
            return self.address()
        if t.text == "{" and t.kind == "punct":
            return Vec(self.operand_group("{", "}"))
        if t.text == "(" and t.kind == "punct":
            return Vec(self.operand_group("(", ")"))
        if t.text == "!" and t.kind == "punct":
            self.advance()
            r = self.expect_kind("ident", "a predicate after '!'")
            return Reg(r.text, negated=True)
        if t.text == "-" and t.kind == "punct":
            self.advance()
            imm = self.immediate()
            return Imm(-imm.value, "-" + imm.text)
        if t.kind in ("int", "float"):
            return self.immediate()
        if t.kind == "ident":
            return self.named_operand()
        raise self.error("expected an operand")

    def named_operand(self) -> Operand:
        """A register (`%r1`, `%tid.x`, or a `.reg` declared without `%` in an inline-asm scope), a predicate
        pair `d|p`, a symbol, or `symbol+offset`."""
        t = self.advance()
        name = t.text
        if name.startswith("%") or name in self.reg_names:
            while self.tok.kind == "dir" and self.tok.glued and name.startswith("%"):
                name += self.advance().text
            reg = Reg(name)
            if self.tok.text == "|" and self.tok.kind == "punct":
                self.advance()
                other = self.expect_kind("ident", "a predicate after '|'")
                return PredPair(reg, Reg(other.text))
            return reg
        if self.tok.text == "|" and self.tok.kind == "punct":
            self.advance()
            other = self.expect_kind("ident", "a predicate after '|'")
            return PredPair(Reg(name), Reg(other.text))
        if self.tok.text == "+" and self.peek().kind == "int":
            self.advance()
            return Addr(Sym(name), self.expect_int())
        return self.name_value(name)

    def immediate(self) -> Imm:
        t = self.advance()
        if t.kind == "int":
            return Imm(_int_value(t.text), t.text)
        if t.kind == "float":
            return Imm(_float_value(t.text), t.text)
        raise self.error("expected a number", t)

    def operand_group(self, open_: str, close: str) -> tuple[Operand, ...]:
        if self.nesting >= _MAX_NESTING:
            raise self.error(f"operands nested more than {_MAX_NESTING} levels deep")
        self.nesting += 1
        try:
            return self._group_items(open_, close)
        finally:
            self.nesting -= 1

    def _group_items(self, open_: str, close: str) -> tuple[Operand, ...]:
        self.expect(open_)
        items: list[Operand] = []
        if self.accept(close):
            return ()
        while True:
            items.append(self.operand())
            if self.accept(close):
                return tuple(items)
            self.expect(",")

    def address(self) -> Addr:
        """`[base]`, `[base+off]`, `[base+-off]`, `[imm]`, and texture forms `[tex, {coords}]`."""
        self.expect("[")
        base: Reg | Sym | None = None
        offset = 0
        t = self.tok
        if t.kind == "ident":
            base = self.named_operand()  # type: ignore[assignment]
            if isinstance(base, Addr):
                base, offset = base.base, base.offset
            elif isinstance(base, PredPair):
                raise self.error("unexpected '|' in an address", t)
        elif t.kind == "int" or t.text == "-":
            offset = self.expect_int()
        else:
            raise self.error("expected a register, symbol or offset in an address")
        if self.tok.text in ("+", "-") and self.tok.kind == "punct":
            sign = -1 if self.advance().text == "-" else 1
            offset += sign * self.expect_int()
        if self.tok.text == ",":
            while self.accept(","):
                self.operand()
        self.expect("]")
        return Addr(base, offset)


def _int_value(text: str) -> int:
    t = text.rstrip("uU")
    if t[:2] in ("0x", "0X"):
        return int(t[2:], 16)
    if t[:2] in ("0b", "0B"):
        return int(t[2:], 2)
    if len(t) > 1 and t[0] == "0":
        try:
            return int(t, 8)
        except ValueError:
            return int(t)
    return int(t)


def _float_value(text: str) -> float:
    if text[:2] in ("0f", "0F"):
        return struct.unpack(">f", bytes.fromhex(text[2:]))[0]
    if text[:2] in ("0d", "0D"):
        return struct.unpack(">d", bytes.fromhex(text[2:]))[0]
    return float(text)


def _unquote(text: str) -> str:
    """A PTX string's text. nvcc writes the bytes of a non-ASCII file name as octal escapes (`k\\303\\251rnel`
    for `kérnel`): the escapes give bytes, and the bytes are UTF-8."""
    if len(text) < 2:
        return text
    decoded = text[1:-1].encode("utf-8").decode("unicode_escape", errors="replace")
    try:
        return decoded.encode("latin-1").decode("utf-8")
    except (UnicodeEncodeError, UnicodeDecodeError):  # not a byte string (a \\u escape), or not UTF-8 bytes
        return decoded


def _resolve_locs(module: Module, done: list[Function]) -> None:
    """Replace the `.file` index stored in each SourceLoc by the file name (files may come after code); the
    functions in `done` (reused from an earlier parse) have theirs already."""
    skip = {id(fn) for fn in done}
    # the instructions after one `.loc` share its SourceLoc, and so share the resolved one (both immutable)
    # (each kept with its original, so that no id is reused while the table lives)
    resolved: dict[int, tuple[SourceLoc, SourceLoc]] = {}
    for fn in module.functions:
        if id(fn) in skip:
            continue
        for ins in fn.body:
            loc = ins.loc
            if loc is not None:
                pair = resolved.get(id(loc))
                if pair is None:
                    pair = resolved[id(loc)] = (loc, _named(loc, module.files))
                ins.loc = pair[1]


def _named(loc: SourceLoc, files: dict[int, str]) -> SourceLoc:
    """`loc` (and the call site it was inlined at) with the file's name in place of its `.file` index."""
    at = loc.inlined_at
    return SourceLoc(files.get(int(loc.file), loc.file), loc.line, loc.column,
                     None if at is None else _named(at, files))


def parse_ptx(text: str, path: str | None = None, reuse: FunctionReuse | None = None) -> Module:
    """Parse PTX text into a `Module`; raise `PtxSyntaxError` (and nothing else) on malformed input.

    With `reuse` (a long-lived caller's), functions parsed before with the same text and position are taken
    from it and the functions parsed now are added to it (see reuse.py)."""
    if "\x00" in text:
        pos = text.index("\x00")
        line = text.count("\n", 0, pos) + 1
        raise PtxSyntaxError("binary data (NUL byte) in PTX text", line, pos - text.rfind("\n", 0, pos))
    parser: _Parser | None = None
    try:
        parser = _Parser(text, reuse, path)
        if len(parser.toks) > _MAX_TOKENS:
            raise PtxSyntaxError("PTX text too large to analyse", 1, 1)
        module = parser.module()
        _raise_when_nothing_parsed(module, parser.errors)
    except PtxSyntaxError:
        raise
    except RecursionError:
        tok = parser.tok if parser is not None and parser.toks else None
        line, col = (tok.line, tok.column) if tok else (1, 1)
        raise PtxSyntaxError("PTX nested too deeply to analyse", line, col) from None
    except (ValueError, IndexError, KeyError, TypeError, struct.error, OverflowError) as exc:
        tok = parser.tok if parser is not None and parser.toks else None
        line, col = (tok.line, tok.column) if tok else (1, 1)
        raise PtxSyntaxError(f"malformed PTX ({type(exc).__name__}: {exc})", line, col) from None
    _resolve_locs(module, list(parser.kept.values()))
    module.source_path = path
    if reuse is not None:
        _keep(reuse, parser, path, module.files)
    return module


def _keep(reuse: FunctionReuse, parser: _Parser, path: str | None, files: dict[int, str]) -> None:
    """Store the functions parsed or moved now, by key and by moved key (with the module's `.file` table, which
    names their locations' files), for the next parse."""
    firsts = {span.key: span for span in parser.spans.values()}
    for key, fn in [*parser.fresh, *parser.moved]:
        reuse.put(key, fn)
        found = parser.moved_key(firsts[key], path)
        if found is not None:
            reuse.put_moved(found[0], fn, found[1], files)
    reuse.keep_origins(parser.origins)
    reuse.reused += len(parser.kept)
    reuse.parsed += len(parser.fresh)
    reuse.moved += len(parser.moved)


def _deltas_by_name(old: dict[str, int], new: dict[str, int], files: dict[int, str]) -> dict[str, int] | None:
    """How far each file's lines moved, by the file name a resolved `SourceLoc` holds (`_named`, through the
    earlier parse's `.file` table: the moved key holds the table's text, so it is this text's too); None when
    two indices name one file and moved apart (never in nvcc's output), or the files differ."""
    if old.keys() != new.keys():
        return None
    deltas: dict[str, int] = {}
    for index, line in new.items():
        name = files.get(int(index), index)
        delta = line - old[index]
        if deltas.setdefault(name, delta) != delta:
            return None
    return deltas


def _raise_when_nothing_parsed(module: Module, errors: list[FunctionError]) -> None:
    """Keep the errors of some functions when others parsed; raise the first when no function survived."""
    module.errors = list(errors)
    if errors and not any(f.has_body for f in module.functions):
        first = errors[0]
        raise PtxSyntaxError(first.message, first.line, first.column)


def kernel_shared_bytes(module: Module, fn: Function) -> int:
    """Static shared bytes of a kernel: its own `.shared` declarations plus module-scope ones it references."""
    names = {d.name for d in module.globals if d.space == "shared" and not d.extern}
    used: set[str] = set()
    if names:
        for ins in fn.body:
            for op in ins.operands:
                base = op.base if isinstance(op, Addr) else op
                if isinstance(base, Sym) and base.name in names:
                    used.add(base.name)
    extra = sum(d.size_bytes for d in module.globals if d.name in used)
    return fn.static_shared_bytes + extra
