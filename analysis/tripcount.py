"""Loop trip counts from PTX induction variables, with the launch's `loops` value as the stated fallback.

A loop's count is read from its exit test when the test compares an induction variable against a bound and
init, bound and step are all known: immediates, kernel parameters whose value the launch knows, or launch
sizes (`%ntid`, `%nctaid`). Anything else leaves the count unknown with the reason, and the count falls back
to the launch's `loops` value (annotation, setting, CLI or default), which says where it came from.

A trip count is a query on the kernel's dataflow layer (`kerncast.analysis.dataflow`, shared with the memory
analysis): the induction variable and its update come from `dataflow.induction`, and the start, step and bound
from `dataflow.values`, which walks the reaching definitions back from the loop's entry. This module reads the
exit test and counts.

The trip count is the number of times the loop's header block runs per entry into the loop. nvcc rotates
loops so that the test sits at the bottom, where this is the number of times the body runs. A loop whose very
first test fails is counted once: the zero-trip guard nvcc places in front of a rotated loop is not followed.
A bound that depends on the block or thread index (`%ctaid`, `%tid`) is read for several of them: the first,
one step along each axis, the middle and the last of the grid (and of the block). When every sample gets the
same count, the index terms cancel (CUDA's matrixMul runs `a` from `wA * BLOCK_SIZE * by` to
`aBegin + wA - 1`: `wA / BLOCK_SIZE` for every block; a grid-stride loop over exactly as many elements as
threads runs once in every thread) and that count is reported as such; otherwise the count stays unknown.
For affine bounds, agreement at the first index and one step along each axis is a proof; the other samples
guard the rest.
A `!=` loop whose counter starts at its exit value (`n & 3` remainder loops of an unrolled loop when the count
is a multiple of the unroll factor) is skipped by nvcc's zero-trip guard and counted 0.

Counting never iterates an additive loop (a closed-form search is used), so its cost does not grow with the
trip count; geometric loops (`s *= 2`, `s >>= 1`) are stepped, which ends within a few dozen steps.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any

from kerncast.analysis.cexpr import Unknown
from kerncast.analysis.cfg import Cfg
from kerncast.analysis.dataflow import ODD_PTX_ERRORS, KernelDataflow
from kerncast.analysis.dataflow import expr as E
from kerncast.analysis.dataflow.expr import int_type
from kerncast.analysis.dataflow.induction import ADDITIVE as _ADDITIVE
from kerncast.analysis.dataflow.induction import (
    Recurrence,
    after_update,
    carried_update,
    check_once_per_iteration,
    copied_back,
    geometric_step,
    offset_induction,
    step,
    update_in_loop,
)
from kerncast.analysis.dataflow.values import NEGATED as _NEGATE
from kerncast.analysis.dataflow.values import (
    AfterLoop,
    EntryValues,
    Index,
    IndexDependent,
    SharedReads,
    UnknownParameter,
    launch_dim,
    setp_parts,
)
from kerncast.analysis.intops import COMPARISONS, wrap
from kerncast.analysis.launch import DEFAULT_LOOPS, Launch, Sourced
from kerncast.analysis.loops import Loop, LoopForest
from kerncast.analysis.ptx.model import Function, Instruction, Reg, line_in_file
from kerncast.analysis.sampling import evenly_spread

_FLIP = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le", "lo": "hi", "ls": "hs", "hi": "lo", "hs": "ls",
         "eq": "eq", "ne": "ne"}
_SYMBOL = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">=", "lo": "<", "ls": "<=",
           "hi": ">", "hs": ">="}
MAX_GEOMETRIC_STEPS = 256
WARP = 32
#: warps of a block whose lanes are counted one by one for a count that differs between threads, and blocks
#: for one that differs between blocks (an eighth of them when it differs between threads too)
MAX_SAMPLED_WARPS = 8
MAX_SAMPLED_BLOCKS = 64
#: warps sampled where each lane's exit test is read from the PTX (a count neither affine nor repeated by warp)
PER_LANE_WARPS = 4
#: values an unknown parameter is read at, for a count in which its terms cancel: small ones, and one beyond any
#: thread index of a launch, where a bound the parameter really sets (a grid-stride loop's `i < n`) is not passed
PARAMETER_SAMPLES = (1, 2, 13, 1000, 1 << 20)
#: blocks sampled where each lane's exit test is read from the PTX and the count differs between blocks too
PER_LANE_BLOCKS = 4
#: iterations a loop no closed form reads is stepped through before it is left unknown
MAX_STEPPED_ITERATIONS = 1024
#: iterations of an enclosing loop at which a count that moves with it is read
MAX_SAMPLED_ITERATIONS = 16


@dataclass(frozen=True)
class ExitTest:
    """The loop keeps running while `iv <cmp> bound`; `after_update` says the test sees the updated iv."""

    iv: str
    cmp: str
    bound: int
    init: int
    op: str
    step: int
    after_update: bool
    bits: int
    signed: bool
    line: int | None
    inputs: tuple[str, ...] = ()  # the parameter values read, e.g. "wA = 1024 from the launch-site"
    guarded: bool = False  # a branch ahead of the loop skips it to where it exits (nvcc's zero-trip guard)
    skipped: bool = False  # that branch is taken at the index read: the loop runs 0 times there


def trip_counts(function: Function, cfg: Cfg, loops: LoopForest | Iterable[Loop],
                launch: Launch | None, dataflow: KernelDataflow | None = None,
                main_file: str | None = None) -> dict[int, Sourced]:
    """Trip count per loop, keyed by the loop's header block id; every value says where it came from.

    `loops` is a `LoopForest` or any iterable of `Loop`s. Never raises: a loop that cannot be read gets the
    fallback count with the reason in its detail, at the loop's line in `main_file` (any file when None).
    """
    fallback = launch.loops if launch is not None else Sourced(DEFAULT_LOOPS, "default", None,
                                                               "default trip count for loops of unknown count")
    out: dict[int, Sourced] = {}
    loop_list = list(_loop_list(loops))
    if dataflow is None:
        forest = loops if isinstance(loops, LoopForest) else LoopForest(loop_list, {}, [])
        dataflow = KernelDataflow(function, cfg, forest)
    for loop in loop_list:
        line = _header_line(cfg, loop.header, main_file)
        try:
            count, detail = _count_or_per_block(dataflow, loop, loop_list, launch)
        except NoExit:
            out[loop.header] = Sourced(0, "ptx", line, "the loop has no exit: a kernel that finishes never "
                                       "enters it (nvcc's endless loop for undefined behaviour), so it runs 0 times")
            continue
        except Unknown as exc:
            cancelled = _whatever_the_parameter(dataflow, loop, loop_list, launch, exc) \
                if isinstance(exc, UnknownParameter) else None
            if cancelled is not None:
                out[loop.header] = Sourced(cancelled[0], "ptx", line, cancelled[1])
                continue
            if loop.parent is None or "enclosing loop" not in exc.reason:
                stepped = _stepped_through(dataflow, loop, launch)
                out[loop.header] = (Sourced(stepped[0], "ptx", line, stepped[1]) if stepped is not None else
                                    _fallback(fallback, exc.reason, line))
                continue
            try:
                count, detail = _count_over_outer(dataflow, loop, loop_list, launch, out, main_file)
            except Unknown as again:
                out[loop.header] = _fallback(fallback, f"{exc.reason}; {again.reason}", line)
                continue
            except ODD_PTX_ERRORS as again:
                out[loop.header] = _fallback(fallback, f"the loop could not be read: {again!r}", line)
                continue
        except ODD_PTX_ERRORS as exc:
            out[loop.header] = _fallback(fallback, f"the loop could not be read: {exc!r}", line)
            continue
        out[loop.header] = Sourced(count, "ptx", line, detail)
    return out


def _count_or_per_block(dataflow: KernelDataflow, loop: Loop, loop_list: list[Loop],
                        launch: Launch | None) -> tuple[int, str]:
    """(count, detail) of one loop under `launch`: its closed form, or, where the count depends on the block
    or thread index, its count read per sampled block (`_count_per_block`). Raises what those raise."""
    try:
        count, test = _count_of(dataflow, loop, loop_list, launch)
        return count, _describe(test, count)
    except IndexDependent:
        return _count_per_block(dataflow, loop, loop_list, launch)


def _whatever_the_parameter(dataflow: KernelDataflow, loop: Loop, loop_list: list[Loop], launch: Launch | None,
                            exc: UnknownParameter) -> tuple[int, str] | None:
    """(count, detail) of a loop whose start and bound read a parameter the launch does not give, when its
    terms cancel (`for (i = BITS * iter; i < BITS * (iter + 1); i++)` runs BITS times for every `iter`): the
    count is read with the parameter at each of `PARAMETER_SAMPLES` and taken when they all agree (for
    affine bounds two agreeing values are a proof; the others guard the rest). None otherwise."""
    if launch is None:
        return None
    counts: set[int] = set()
    for value in PARAMETER_SAMPLES:
        trial = replace(launch, params={**launch.params, exc.key: Sourced(value, "annotation", None, "sampled")})
        try:
            counts.add(_count_or_per_block(dataflow, loop, loop_list, trial)[0])
        except (Unknown, *ODD_PTX_ERRORS):
            return None
        if len(counts) > 1:
            return None
    (count,) = counts
    if count == 0:  # the same 0 for every value: the sampled threads start beyond it, nothing cancels
        return None
    name = exc.reason.split(" has no known value")[0].removeprefix("parameter ")
    return count, (f"{count} iterations whatever the value of parameter {name}: the count is the same with it "
                   f"at {', '.join(map(str, PARAMETER_SAMPLES))} (its terms in the start and the bound cancel)")


def _samples(launch: Launch | None, field: str) -> list[tuple[int, int, int]]:
    """Indices to read an index-dependent count at: first, one step along each axis, middle, last."""
    dim = launch_dim(launch, field)
    dims = tuple(dim.value) if dim is not None and dim.value is not None else (1 << 10, 1 << 10, 1 << 6)
    last = tuple(max(0, int(d) - 1) for d in dims)
    picks = {(0, 0, 0), last, tuple(d // 2 for d in last)}
    for axis in range(3):
        step = [0, 0, 0]
        step[axis] = min(1, last[axis])
        picks.add(tuple(step))
    return sorted(picks)  # type: ignore[arg-type]


def _count_per_block(dataflow: KernelDataflow, loop: Loop, loop_list: list[Loop],
                     launch: Launch | None) -> tuple[int, str]:
    """The count of a loop whose bounds read the block index, when it is the same for every sampled block."""
    read = _ReadOnce(dataflow, loop, loop_list, launch)
    counts: dict[int, ExitTest] = {}
    for block in _samples(launch, "grid"):
        for thread in _samples(launch, "block"):
            test = read(block, thread)
            counts.setdefault(_count(test), test)
    skipped = [t.skipped for t in counts.values()]
    if any(skipped):
        if not all(skipped):
            # skipped in some threads (0 there), counted in the others: a warp runs as long as its longest lane
            return _count_per_warp(read, launch)
        test = next(iter(counts.values()))
        return 0, ("nvcc's guard ahead of the loop jumps past it in every sampled block and thread (the work is "
                   f"done before it, in the unrolled remainder): 0 iterations{''.join('; ' + i for i in test.inputs)}")
    if len(counts) != 1:
        return _count_per_warp(read, launch)
    count, test = next(iter(counts.items()))
    distance = test.bound - test.init
    return count, (f"induction variable {test.iv} runs {distance:+d} from its block-dependent start, step "
                   f"{_ADDITIVE.get(test.op, 0) * test.step:+d} while {_SYMBOL[test.cmp]} its bound: {count} "
                   f"iterations in every block and thread (the index terms cancel"
                   f"{''.join('; ' + i for i in test.inputs)})"
                   if test.op in _ADDITIVE else _describe(test, count) + " in every block and thread")


class _ReadOnce:
    """A loop's exit test at a (block, thread) index, each index read from the PTX once: the check that the
    count is the same everywhere and the per-warp model read the same first, unit-step and last indices."""

    def __init__(self, dataflow: KernelDataflow, loop: Loop, loop_list: list[Loop], launch: Launch | None) -> None:
        self._args = (dataflow, loop, loop_list, launch)
        self._tests: dict[Index, ExitTest] = {}
        #: the values read at one index that no index enters (a bound, a step), for the readers of the others
        self._shared: SharedReads = {}

    def __call__(self, block: tuple[int, int, int], thread: tuple[int, int, int]) -> ExitTest:
        index = (block, thread)
        test = self._tests.get(index)
        if test is None:
            dataflow, loop, loop_list, launch = self._args
            try:
                test = _exit_test(dataflow, loop, loop_list, launch, index, shared=self._shared)
            except Unknown:
                # a start chosen by the path into the loop (nvcc's remainder of a loop unrolled by 4, peeled
                # into straight code, hands its counter over on one of four paths) cannot be read; the loop
                # still runs 0 times where the guard ahead of it is taken
                test = _skipped_at(dataflow, loop, launch, index)
                if test is None:
                    raise
            self._tests[index] = test
        return test


def _count_per_warp(read: _ReadOnce, launch: Launch | None) -> tuple[int, str]:
    """The count of a loop whose start or bound differs between threads or blocks (`for (i = lane; i < C;
    i += 32)`, block- and grid-stride loops, `for (k = blockIdx.x; k < n; ++k)`): a warp runs the loop as long
    as its longest lane, so the count is the per-warp maximum, averaged over the sampled warps of the sampled
    blocks; the per-thread mean (the work the lanes share) is said beside it.

    The exit test is read at a few indices and its start, bound and step taken as affine in the block and
    thread indices (see `_IndexModel`); every lane's count is then the closed form of its own values, without
    walking the PTX per lane, so many warps and blocks can be counted."""
    model = _IndexModel(read, launch)
    blocks = evenly_spread(model.blocks, model.sampled_blocks)
    if not model.by_block:
        blocks = [0]
    warps = evenly_spread(-(-model.threads // WARP), model.sampled_warps) if model.by_thread else [0]
    warp_max: list[int] = []
    per_thread: list[int] = []
    for b in blocks:
        for w in warps:
            lanes = range(w * WARP, min(w * WARP + WARP, model.threads)) if model.by_thread else range(1)
            counts = [_count(model.test(b, t)) for t in lanes]
            warp_max.append(max(counts))
            per_thread += counts
    first = model.test(0, 0)
    count = round(sum(warp_max) / len(warp_max))
    mean = sum(per_thread) / len(per_thread)
    delta = f", step {_ADDITIVE[first.op] * first.step:+d}" if first.op in _ADDITIVE else ""
    where = " and ".join(w for w, on in (("thread", model.by_thread), ("block", model.by_block)) if on)
    spread = f"{min(warp_max)} to {max(warp_max)}, " if min(warp_max) != max(warp_max) else ""
    lanes_note = (f"; {mean:.1f} per thread on average (the work)" if model.by_thread else "")
    return count, (f"induction variable {first.iv} starts or ends at a {where}-dependent value{delta}: "
                   f"{'a warp runs as long as its longest lane, ' if model.by_thread else ''}{count} iterations "
                   f"per warp ({spread}mean over {len(warp_max)} sampled warps){lanes_note}"
                   f"{''.join('; ' + i for i in first.inputs)}")


class _IndexModel:
    """The exit test of any (block, thread) of the launch, by linear block and thread index, from tests read
    at index 0 and one step along each axis, with start, bound and step affine in the indices (checked at
    the last and middle indices). Where the test is not affine in the thread index but every warp repeats
    the first warp's lanes (the count of nvcc's remainder loop ahead of a lane-strided loop unrolled by 4,
    `((C - 1 - lane) / 32 + 1) % 4`), and the same in every block, the first warp's tests are read lane by
    lane. Unknown otherwise (a bound such as `tid * tid`)."""

    def __init__(self, read: _ReadOnce, launch: Launch | None) -> None:
        self._read = read
        self.block_dims = _dims(launch, "block")
        self.grid_dims = _dims(launch, "grid")
        self.threads = self.block_dims[0] * self.block_dims[1] * self.block_dims[2]
        self.blocks = self.grid_dims[0] * self.grid_dims[1] * self.grid_dims[2]
        self.base = self._read((0, 0, 0), (0, 0, 0))
        self.slopes: list[tuple[int, int, int]] = []  # per axis: ctaid x, y, z, tid x, y, z
        for axis in range(6):
            if (self.grid_dims + self.block_dims)[axis] == 1:
                self.slopes.append((0, 0, 0))
                continue
            unit = tuple(1 if a == axis else 0 for a in range(6))
            t = self._read(unit[:3], unit[3:])  # type: ignore[arg-type]
            self.slopes.append((t.init - self.base.init, t.bound - self.base.bound, t.step - self.base.step))
        self.by_block = any(any(s) for s in self.slopes[:3])
        self.by_thread = any(any(s) for s in self.slopes[3:])
        self._lanes: list[ExitTest] | None = None
        #: how many warps to sample: fewer where every lane's test is read from the PTX
        self.sampled_warps = MAX_SAMPLED_WARPS
        #: how many blocks to sample, and whether each sampled lane of them is read from the PTX
        self.sampled_blocks = MAX_SAMPLED_BLOCKS // 8 if self.by_thread else MAX_SAMPLED_BLOCKS
        self.every_lane = False
        last_b, last_t = _unflatten(self.blocks - 1, self.grid_dims), _unflatten(self.threads - 1, self.block_dims)
        mid_b = _unflatten(self.blocks // 2, self.grid_dims)
        mid_t = _unflatten(self.threads // 2 + WARP // 2 - 1, self.block_dims)
        probes = [(last_b, last_t), (mid_b, mid_t), (last_b, (0, 0, 0))]
        if all(_same_test(self._read(b, t), self._affine(b, t)) for b, t in probes):
            return
        # not affine: the first warp's own tests, when the other warps and blocks repeat them
        lanes = [self._read((0, 0, 0), _unflatten(t, self.block_dims)) for t in range(min(WARP, self.threads))]
        self._lanes, self.by_block, self.by_thread = lanes, False, True
        if any(not _same_test(self._read(b, t), self._read((0, 0, 0), t)) for b, t in probes):
            # neither affine nor the same in every block (`for (i = 0; i < idx; i++)` with idx the global
            # thread index, unrolled by 4: idx - idx % 4 in steps of 4): every sampled lane of a few sampled
            # blocks is read from the PTX
            self._lanes, self.by_block = None, True
            self.sampled_warps, self.sampled_blocks, self.every_lane = PER_LANE_WARPS, PER_LANE_BLOCKS, True
            return
        for b, t in probes:
            lane = (t[0] + self.block_dims[0] * (t[1] + self.block_dims[1] * t[2])) % WARP
            if not _same_test(self._read(b, t), lanes[lane]):
                # the same in every block but not in every warp (a remainder loop that starts where a loop
                # unrolled by hand left each thread): the sampled warps' lanes are read one by one
                self._lanes, self.sampled_warps = None, PER_LANE_WARPS
                break

    def _affine(self, block: tuple[int, int, int], thread: tuple[int, int, int]) -> ExitTest:
        b = self.base
        init, bound, step = b.init, b.bound, b.step
        for x, (d_init, d_bound, d_step) in zip(block + thread, self.slopes, strict=True):
            init, bound, step = init + d_init * x, bound + d_bound * x, step + d_step * x
        # built field by field: this runs for every sampled lane, where `dataclasses.replace` costs most
        return ExitTest(b.iv, b.cmp, bound, init, b.op, step, b.after_update, b.bits, b.signed, b.line, b.inputs,
                        b.guarded)

    def test(self, block: int, thread: int) -> ExitTest:
        """The exit test at a linear block and thread index."""
        if self._lanes is not None:
            return self._lanes[thread % WARP]
        if self.every_lane:
            return self._read(_unflatten(block, self.grid_dims), _unflatten(thread, self.block_dims))
        if self.sampled_warps < MAX_SAMPLED_WARPS:  # read lane by lane, the same in every block
            return self._read((0, 0, 0), _unflatten(thread, self.block_dims))
        return self._affine(_unflatten(block, self.grid_dims), _unflatten(thread, self.block_dims))


def _unflatten(i: int, dims: tuple[int, int, int]) -> tuple[int, int, int]:
    return i % dims[0], (i // dims[0]) % dims[1], i // (dims[0] * dims[1])


def _dims(launch: Launch | None, field: str) -> tuple[int, int, int]:
    """The launch's block or grid size, which a count that differs between threads or blocks needs."""
    dim = launch_dim(launch, field)
    value = dim.value if dim is not None else None
    if value is None:
        raise Unknown(f"the count differs between threads or blocks and the {field} size is unknown")
    return tuple(max(1, int(d)) for d in value)  # type: ignore[return-value]


def _same_test(a: ExitTest, b: ExitTest) -> bool:
    return (a.init, a.bound, a.step, a.op, a.cmp) == (b.init, b.bound, b.step, b.op, b.cmp)


def trip_count_assumptions(counts: dict[int, Sourced]) -> list[str]:
    """One sentence per loop whose count was not read from the PTX, for a report's assumptions."""
    return [f"loop at line {c.line if c.line is not None else '?'}: {c.detail}"
            for _, c in sorted(counts.items()) if c.source != "ptx"]


def trip_values(counts: dict[int, Sourced]) -> dict[int, float]:
    """The numeric trip counts by loop header, fallbacks included: the one form memory, time and power weigh
    instructions with (a fallback is stated once, in the time assumptions)."""
    return {h: float(s.value) for h, s in counts.items()
            if isinstance(s.value, int | float) and not isinstance(s.value, bool)}


def _loop_list(loops: LoopForest | Iterable[Loop]) -> Iterable[Loop]:
    return loops.loops if isinstance(loops, LoopForest) else loops


def _header_line(cfg: Cfg, header: int, main_file: str | None) -> int | None:
    for ins in cfg.instructions(header):
        if (line := line_in_file(ins.loc, main_file)) is not None:
            return line
    return None


def _fallback(fallback: Sourced, reason: str, line: int | None) -> Sourced:
    where = {"default": "the default", "annotation": "the // kerncast: loops= annotation",
             "placeholder": "the placeholder loops=N? of the // kerncast: annotation",
             "setting": "the loops setting", "cli": "--loops"}.get(fallback.source, fallback.source)
    return Sourced(fallback.value, fallback.source, line,
                   f"trip count unknown ({reason}); assumed {fallback.value} from {where}")


def _describe(t: ExitTest, count: int) -> str:
    delta = _ADDITIVE.get(t.op, 0) * t.step
    step = {"add": f"{delta:+d}", "sub": f"{delta:+d}", "mul": f"*{t.step}", "shl": f"<<{t.step}",
            "shr": f">>{t.step}", "div": f"/{t.step}"}[t.op]
    return (f"induction variable {t.iv} from {t.init} step {step} while {_SYMBOL[t.cmp]} {t.bound}: "
            f"{count} iterations{_inputs(t)}")


def _inputs(t: ExitTest) -> str:
    return f" ({', '.join(t.inputs)})" if t.inputs else ""


# ------------------------------------------------------------------------------------------ reading the test


def _exit_test(dataflow: KernelDataflow, loop: Loop, all_loops: list[Loop], launch: Launch | None,
               index: Index | None = None, active: frozenset[int] = frozenset(),
               outer: dict[int, int] | None = None, part: int | None = None,
               shared: SharedReads | None = None) -> ExitTest:
    """Find the loop's single exit branch, its `setp`, and the induction variable it compares. `active` holds
    the loops whose values are being read already (a loop's start may be where an earlier loop left a
    register: that loop's own count is read at the same index)."""
    fn, cfg, defs = dataflow.function, dataflow.cfg, dataflow.definitions
    exits = list(loop.exits)
    if not exits:
        raise NoExit("the loop has no exit")
    if len(exits) != 1:
        raise Unknown(f"the loop has {len(exits)} exits (break or return)")
    block, outside = exits[0]
    body = cfg.instructions(block)
    branch = body[-1] if body else None
    if branch is None or branch.opcode != "bra" or branch.guard is None:
        raise Unknown("the loop exit is not a conditional branch")
    target_block = _block_of_label(fn, cfg, branch.branch_target)
    continue_if_true = target_block != outside
    stays_while_true = branch.guard.negated == (not continue_if_true)
    pred, negate = branch.guard.reg, not stays_while_true
    both = _conjunction(body, pred) if stays_while_true else None
    if both is not None:  # `k < blockDim.x && base + k < n`: one `and.pred` of two tests
        if part is None:
            raise BothTests("the loop runs while two tests both hold")
        pred, negate = both[part]
    setp = _defining_setp(body, pred)
    cmp, a, b = setp_parts(setp, pred)
    if negate:
        cmp = _NEGATE[cmp]
    in_loop = set(loop.blocks)
    nested = [set(other.blocks) for other in all_loops
              if other.header != loop.header and other.header in in_loop and set(other.blocks) <= in_loop]
    reader = EntryValues(fn, cfg, defs, dataflow.reaching, loop, launch, index,
                         _after_loop(dataflow, all_loops, launch, active | {loop.header}), all_loops,
                         _in_outer(dataflow, all_loops, launch, index, loop, outer) if outer else None, shared)
    for iv_op, bound_op, rel in ((a, b, cmp), (b, a, _FLIP[cmp])):
        if not isinstance(iv_op, Reg) or iv_op.is_special:
            continue
        iv, update = iv_op.name, update_in_loop(defs, cfg, iv_op.name, in_loop)
        after, recurrence, offset, recomputed, from_head = None, None, 0, None, False
        if update is None:
            carried = carried_update(defs, cfg, iv_op.name, in_loop)
            derived = offset_induction(defs, cfg, iv_op.name, in_loop) if carried is None else None
            if derived is not None:
                # `t = k + c` compared: the test is on k against the bound less c, as k stood when t was formed
                iv, formed, other, sign = derived
                update = update_in_loop(defs, cfg, iv, in_loop)
                assert update is not None
                check_once_per_iteration(cfg, loop, formed, nested)
                if not after_update(cfg, formed, setp, block):
                    raise Unknown("the compared value is computed after the test")
                after = after_update(cfg, update, formed, cfg.block_of[formed.index])
                offset = sign * reader.invariant(other) if other is not None else 0
            elif carried is None:
                recurrence = dataflow.symbolic.recurrence(loop.id, iv_op.name)
                update = copied_back(defs, cfg, iv_op.name, in_loop, recurrence)
                head = _header_copy(dataflow, loop, iv_op.name, reader) if update is None else None
                if head is not None:
                    # `d = s` at the top of the body, `s = d + 32` below, the test on d: s as it entered
                    iv, update, recomputed = head
                    after, recurrence, from_head = False, None, True
                elif update is None:
                    update, recomputed = _recomputed(dataflow, loop, iv_op.name, recurrence, reader)
                    recurrence = None
                    if update is None:
                        continue
            else:
                # `t = s << 1; test t; s = t`: the test sees the carried variable's next value
                iv, update, after = carried[0], carried[1], True
                check_once_per_iteration(cfg, loop, carried[2], nested)
        check_once_per_iteration(cfg, loop, update, nested)
        if after is None:
            after = after_update(cfg, update, setp, block)
        elif not offset and not from_head and not after_update(cfg, update, setp, block):
            raise Unknown("the compared value is computed after the test")
        bits, signed = int_type(setp)
        if recurrence is not None:  # moved by a copy `s = t` (t = s / 2**k, s >> 1, ...): the recurrence steps it
            op, amount = str(recurrence.op), recurrence.factor
        elif recomputed is not None:
            op, amount = "add", recomputed
        else:
            op, amount = step(update, iv, reader.invariant)
        init = reader.outside(iv)
        bound = reader.invariant(bound_op) - offset
        return ExitTest(iv, rel, bound, init, op, amount, after, bits, signed, setp.loc.line if setp.loc else None,
                        tuple(dict.fromkeys(reader.inputs)), _zero_trip_guard(dataflow, loop))
    raise Unknown("the exit test does not compare an induction variable updated once per iteration")


def _stepped_through(dataflow: KernelDataflow, loop: Loop, launch: Launch | None) -> tuple[int, str] | None:
    """(count, detail) of a loop the same in every thread whose exit test no closed form reads (a step that
    changes, `j += len` with `len = n - j` on the last chunk), by stepping its registers' symbolic values
    iteration by iteration under the launch's sizes and parameters until the exit test holds; None when a
    value is not a number there (it depends on the thread, on data or on an unknown size) or the loop runs
    past MAX_STEPPED_ITERATIONS."""
    sym = dataflow.symbolic
    atoms = sym.atoms
    leave = leave_value(dataflow, loop)
    if leave is None:
        return None
    reader = EntryValues(dataflow.function, dataflow.cfg, dataflow.definitions, dataflow.reaching, loop, launch)
    known: dict[int, E.Value] = {}
    for a, key in enumerate(atoms.keys):
        if key[0] == "sym" and (key[1].startswith("param:") or key[1].split(".")[0] in ("ntid", "nctaid")):
            try:
                known[a] = E.const(reader.polynomial(atoms, (((a,), 1),)))
            except Unknown:
                continue
    recs = [rc for rc in sym.recurrences.values() if rc.loop == loop.id]
    state = {rc.atom: E.evaluate(atoms, rc.init, known, {}) for rc in recs}
    for iteration in range(MAX_STEPPED_ITERATIONS):
        subst = {**known, **{a: v for a, v in state.items() if E.as_const(v) is not None}}
        verdict = E.as_const(E.evaluate(atoms, leave, subst, {}))
        if verdict is None:
            return None
        if verdict:
            inputs = "".join(f"; {i}" for i in dict.fromkeys(reader.inputs))
            return iteration + 1, (f"stepped through its registers' values: the exit test holds in iteration "
                                   f"{iteration + 1}, in every block and thread{inputs}")
        state = {rc.atom: E.evaluate(atoms, rc.back, subst, {}) for rc in recs}
    return None


def leave_value(dataflow: KernelDataflow, loop: Loop) -> E.Value:
    """1 where the loop leaves through its only exit: the guard of the exiting branch, negated when the branch
    stays in the loop; None for another shape (the trip counts and the memory analysis's values after a loop
    both read it)."""
    if len(loop.exits) != 1:
        return None
    inside, outside = loop.exits[0]
    blk = dataflow.cfg.blocks[inside]
    last = dataflow.function.body[blk.end - 1] if blk.end > blk.start else None
    if last is None or last.opcode != "bra" or last.guard is None or len(blk.succs) != 2:
        return None
    guard = dataflow.symbolic.guards.get(last.index)
    return guard if _block_of_label(dataflow.function, dataflow.cfg, last.branch_target) == outside else \
        E.sub(E.const(1), guard)


def _zero_trip_guard(dataflow: KernelDataflow, loop: Loop) -> bool:
    """Whether a conditional branch ahead of a bottom-tested loop jumps past it to where it exits: nvcc
    rotates `for (; i < n; i += s)` into a test after the body and guards the entry with the same test, so a
    thread whose start fails the test runs it zero times, not once."""
    return _guard_branch(dataflow, loop) is not None


def _skipped_at(dataflow: KernelDataflow, loop: Loop, launch: Launch | None, index: Index) -> ExitTest | None:
    """A test that counts 0 when the loop's zero-trip guard jumps past it at this (block, thread) index, read
    from the guard's own `setp` under the launch's values; None when it does not, or cannot be read. nvcc
    guards the main loop of a loop unrolled by 4 with the remaining count (`for (j = ty; j < 16; j += 16)`
    unrolled: `15 - ty < 48` skips the main loop in every thread, the one pass is in the peeled remainder)."""
    branch = _guard_branch(dataflow, loop)
    if branch is None or branch.guard is None:
        return None
    fn, cfg = dataflow.function, dataflow.cfg
    body = cfg.instructions(cfg.block_of[branch.index])
    reader = EntryValues(fn, cfg, dataflow.definitions, dataflow.reaching, loop, launch, index)
    try:
        setp = _defining_setp(body, branch.guard.reg)
        cmp, a, b = setp_parts(setp, branch.guard.reg)
        bits, signed = int_type(setp)
        signed = signed and cmp not in ("lo", "ls", "hi", "hs")
        holds = _holds(cmp, wrap(reader.operand(a, setp, 0), bits, signed), wrap(reader.operand(b, setp, 0), bits,
                                                                                  signed))
    except ODD_PTX_ERRORS:
        return None
    except Unknown:
        return None
    taken = holds != branch.guard.negated
    jumps_out = _block_of_label(fn, cfg, branch.branch_target) == loop.exits[0][1]
    if taken != jumps_out:
        return None
    return ExitTest("", "lt", 0, 0, "add", 0, True, bits, signed, setp.loc.line if setp.loc else None,
                    tuple(dict.fromkeys(reader.inputs)), True, True)


def _guard_branch(dataflow: KernelDataflow, loop: Loop) -> Instruction | None:
    """The conditional branch ahead of the loop that can jump past it to where it exits, looked for on the
    chain of single predecessors above the loop's only entry; None without one."""
    cfg, body = dataflow.cfg, dataflow.function.body
    if len(loop.exits) != 1:
        return None
    target = loop.exits[0][1]
    entry = [p for p in cfg.blocks[loop.header].preds if p not in loop.blocks]
    block = entry[0] if len(entry) == 1 else None
    for _ in range(4):
        if block is None:
            return None
        blk = cfg.blocks[block]
        last = body[blk.end - 1] if blk.end > blk.start else None
        if last is not None and last.opcode == "bra" and last.guard is not None and target in blk.succs:
            return last
        block = blk.preds[0] if len(blk.preds) == 1 else None
    return None


def _header_copy(dataflow: KernelDataflow, loop: Loop, reg: str,
                 reader: EntryValues) -> tuple[str, Instruction, int] | None:
    """(the carried register, its update, its step) for a compared register that is a copy, at the top of the
    header, of a register the loop moves by a constant step (`mov d, s` before any write of `s` in the
    header; `add s, d, 32` further down): nvcc tests such a loop's `d + 32 < 32` as `d < 0` on the copy, the
    value `s` held when the iteration began. None for another shape."""
    cfg, defs = dataflow.cfg, dataflow.definitions
    inside = [d for d in defs.get(reg, []) if cfg.block_of[d.index] in loop.blocks]
    if len(inside) != 1 or inside[0].opcode != "mov" or inside[0].guard is not None \
            or cfg.block_of[inside[0].index] != loop.header:
        return None
    copy = inside[0]
    sources = [s for s in copy.srcs if isinstance(s, Reg) and not s.is_special]
    if len(sources) != 1 or len(copy.srcs) != 1:
        return None
    carried = sources[0].name
    head = cfg.blocks[loop.header]
    if any(carried in ins.registers_written for ins in dataflow.function.body[head.start:copy.index]):
        return None
    recurrence = dataflow.symbolic.recurrence(loop.id, carried)
    moved = [d for d in defs.get(carried, []) if cfg.block_of[d.index] in loop.blocks]
    if recurrence is None or recurrence.kind != "affine" or recurrence.step is None or len(moved) != 1 \
            or moved[0].guard is not None:
        return None
    try:
        amount = reader.polynomial(dataflow.symbolic.atoms, recurrence.step)
    except Unknown:
        return None
    return carried, moved[0], amount


def _recomputed(dataflow: KernelDataflow, loop: Loop, reg: str, recurrence: Recurrence | None,
                reader: EntryValues) -> tuple[Instruction | None, int | None]:
    """(its one definition in the loop, its step) for a compared register each iteration recomputes from
    another counter rather than from itself, as the source's `col + 3 * blockDim.x < n` of a loop unrolled by
    hand (`col += 4 * blockDim.x`): its symbolic recurrence is affine with a step the launch gives; (None, None)
    otherwise."""
    if recurrence is None or recurrence.kind != "affine" or recurrence.step is None:
        return None, None
    inside = [d for d in dataflow.definitions.get(reg, []) if dataflow.cfg.block_of[d.index] in loop.blocks]
    if len(inside) != 1 or inside[0].guard is not None:
        return None, None
    return inside[0], reader.polynomial(dataflow.symbolic.atoms, recurrence.step)


def _after_loop(dataflow: KernelDataflow, all_loops: list[Loop], launch: Launch | None,
                active: frozenset[int]) -> AfterLoop:
    """How a register leaves an earlier loop: its entry value, moved once per iteration by its update, as
    many times as that loop runs at the same index (nvcc's remainder loop that runs ahead of a loop unrolled
    by 4 hands over the lane's position, `i = lane + 32 * ((C - 1 - lane) / 32 + 1) % 4`)."""
    def after(loop: Loop, reg: str, index: Index | None) -> tuple[int, int]:
        if loop.header in active:
            raise Unknown(f"{reg} changes in an enclosing loop")
        count = _count(_exit_test(dataflow, loop, all_loops, launch, index, active))
        reader = EntryValues(dataflow.function, dataflow.cfg, dataflow.definitions, dataflow.reaching, loop,
                             launch, index, _after_loop(dataflow, all_loops, launch, active | {loop.header}),
                             all_loops)
        try:
            update = _moved_once(dataflow, all_loops, loop, reg,
                                 f"{reg} is not moved once per iteration of the loop before this one")
            moved = step(update, reg, reader.invariant)
        except Unknown:  # recomputed from another counter (a loop unrolled by hand): its recurrence steps it
            recomputed = _recomputed(dataflow, loop, reg, dataflow.symbolic.recurrence(loop.id, reg), reader)[1]
            if recomputed is None:
                raise
            moved = ("add", recomputed)
        entry = reader.outside(reg)
        bottom_tested = all(block in loop.latches for block, _ in loop.exits)
        runs = count if bottom_tested or count == 0 else count - 1
        return entry, _stepped(entry, moved, runs)

    return after


def _in_outer(dataflow: KernelDataflow, all_loops: list[Loop], launch: Launch | None, index: Index | None,
              inner: Loop, outer: dict[int, int]) -> Callable[[Loop, str], int]:
    """The value a register holds at `inner`'s entry in a sampled iteration (`outer`: header -> iteration) of
    an enclosing loop that moves it once per iteration: its start, stepped once per iteration already begun
    (one more when the step comes before `inner` in the body)."""
    def value(loop: Loop, reg: str) -> int:
        if loop.header not in outer:
            raise Unknown(f"{reg} changes in an enclosing loop")
        cfg = dataflow.cfg
        reader = EntryValues(dataflow.function, cfg, dataflow.definitions, dataflow.reaching, loop, launch, index,
                             _after_loop(dataflow, all_loops, launch, frozenset({loop.header})), all_loops,
                             _in_outer(dataflow, all_loops, launch, index, loop, outer))
        head = _header_copy(dataflow, loop, reg, reader)
        if head is not None:  # the copy taken at the top of the body: the counter as the iteration began
            carried, _, amount = head
            return reader.outside(carried) + amount * outer[loop.header]
        update = _moved_once(dataflow, all_loops, loop, reg, f"{reg} changes in an enclosing loop, not once per "
                             "iteration")
        start = reader.outside(reg)
        steps = outer[loop.header] + (1 if cfg.dominates(cfg.block_of[update.index], inner.header) else 0)
        return _stepped(start, step(update, reg, reader.invariant), steps)

    return value


def _moved_once(dataflow: KernelDataflow, all_loops: list[Loop], loop: Loop, reg: str, missing: str) -> Instruction:
    """The instruction that moves `reg` once per iteration of `loop` (Unknown with `missing` when none does, or
    when it runs other than once per iteration)."""
    cfg = dataflow.cfg
    in_loop = set(loop.blocks)
    update = update_in_loop(dataflow.definitions, cfg, reg, in_loop)
    if update is None:
        raise Unknown(missing)
    nested = [set(o.blocks) for o in all_loops if o.header != loop.header and o.header in in_loop]
    check_once_per_iteration(cfg, loop, update, nested)
    return update


def _stepped(start: int, update: tuple[str, int], times: int) -> int:
    """`start` moved `times` times by an update (opcode, step); a geometric one at most MAX_GEOMETRIC_STEPS
    times (it has reached 0 or overflowed by then)."""
    op, amount = update
    if op in _ADDITIVE:
        return start + _ADDITIVE[op] * amount * times
    for _ in range(min(times, MAX_GEOMETRIC_STEPS)):
        start = geometric_step(op, start, amount)
    return start


def _count_over_outer(dataflow: KernelDataflow, loop: Loop, loop_list: list[Loop], launch: Launch | None,
                      counts: dict[int, Sourced], main_file: str | None) -> tuple[int, str]:
    """The count of a loop whose start or bound moves with the enclosing loop (`k < blockDim.x && base + k
    < n` with `base` the outer loop's chunk; a triangular `j < i`): read at sampled iterations of the
    enclosing loop, whose count must be known, and averaged."""
    parent = next((o for o in loop_list if o.id == loop.parent), None)
    known = counts.get(parent.header) if parent is not None else None
    if parent is None or known is None or known.source != "ptx" or not isinstance(known.value, int) \
            or known.value < 1:
        raise Unknown("a value changes in an enclosing loop whose count is unknown")
    samples = evenly_spread(known.value, MAX_SAMPLED_ITERATIONS)
    found = [_count_of(dataflow, loop, loop_list, launch, {parent.header: j})[0] for j in samples]
    count = round(sum(found) / len(found))
    line = _header_line(dataflow.cfg, parent.header, main_file)
    spread = f"{min(found)} to {max(found)} times, " if min(found) != max(found) else ""
    return count, (f"the start or bound moves with the enclosing loop at line {line if line else '?'}: "
                   f"{spread}{count} on average over {len(found)} of its {known.value} iterations")


class NoExit(Unknown):
    """A loop with no way out (nvcc's `while (1);` for undefined behaviour, `k < blockDim.x` with a zero block):
    a kernel that finishes never enters it."""


class BothTests(Unknown):
    """The loop's exit predicate is the `and` of two tests: each is read on its own (`part` 0 or 1)."""


def _conjunction(body: list[Instruction], pred: str) -> tuple[tuple[str, bool], tuple[str, bool]] | None:
    """((predicate, negated), (predicate, negated)) when `pred` is written last in the block by an
    `and.pred` of two predicate registers; else None."""
    for ins in reversed(body[:-1]):
        if pred in ins.registers_written:
            srcs = list(ins.srcs)
            if ins.opcode == "and" and ins.dtype == "pred" and ins.guard is None and len(srcs) == 2 \
                    and all(isinstance(x, Reg) and not x.is_special for x in srcs):
                return (srcs[0].name, srcs[0].negated), (srcs[1].name, srcs[1].negated)  # type: ignore[union-attr]
            return None
    return None


def _count_of(dataflow: KernelDataflow, loop: Loop, loop_list: list[Loop], launch: Launch | None,
              outer: dict[int, int] | None = None) -> tuple[int, ExitTest]:
    """The loop's count and the test that ends it: for a loop that runs while two tests both hold, the test
    that fails first (the smaller count)."""
    try:
        test = _exit_test(dataflow, loop, loop_list, launch, outer=outer)
        return _count(test), test
    except BothTests:
        tests = [_exit_test(dataflow, loop, loop_list, launch, outer=outer, part=i) for i in (0, 1)]
        return min((_count(t), t) for t in tests)  # type: ignore[no-any-return]


def _block_of_label(fn: Function, cfg: Cfg, label: str | None) -> int | None:
    if label is None or label not in fn.labels:
        return None
    index = fn.labels[label]
    return cfg.block_of[index] if index < len(cfg.block_of) else None


def _defining_setp(body: list[Instruction], pred: str) -> Instruction:
    for ins in reversed(body[:-1]):
        if pred in ins.registers_written:
            if ins.opcode != "setp":
                raise Unknown(f"the exit predicate comes from {ins.full_opcode}")
            return ins
    raise Unknown("the exit predicate is not computed in the exiting block")


# ------------------------------------------------------------------------------------------ counting


def _holds(cmp: str, a: int, b: int) -> bool:
    """The exit test on values already read at its width and signedness."""
    return bool(COMPARISONS[cmp](a, b))


def _count(t: ExitTest) -> int:
    """Number of header executions: one more than the index of the first test that fails."""
    unsigned_cmp = t.cmp in ("lo", "ls", "hi", "hs")
    signed = t.signed and not unsigned_cmp
    bound = wrap(t.bound, t.bits, signed)
    shift = 1 if t.after_update else 0
    if t.skipped:
        return 0
    if t.cmp == "ne" and t.op in _ADDITIVE and t.after_update and t.init == t.bound:
        return 0  # starts at its exit value: nvcc's zero-trip guard in front of the loop skips it
    if t.guarded and t.op in _ADDITIVE and t.after_update and not _holds(t.cmp, wrap(t.init, t.bits, signed), bound):
        return 0  # the test fails at the start: the guard that skips the loop holds (`for (; col < n; ...)`)

    def value(i: int) -> int:
        return wrap(_advance(t, t.init, i + shift), t.bits, signed)

    if not _holds(t.cmp, value(0), bound):
        return 1
    if t.op in _ADDITIVE:
        # searched without wrap-around, which would break the monotonic order the search relies on
        return _first_failure_additive(t, lambda i: _advance(t, t.init, i + shift), bound) + 1
    for i in range(1, MAX_GEOMETRIC_STEPS):
        if not _holds(t.cmp, value(i), bound):
            return i + 1
    raise Unknown(f"the loop does not end within {MAX_GEOMETRIC_STEPS} steps of {t.iv}")


def _advance(t: ExitTest, start: int, n: int) -> int:
    if t.op in _ADDITIVE:
        return start + _ADDITIVE[t.op] * t.step * n
    v = start
    for _ in range(n):
        v = geometric_step(t.op, v, t.step)
        if v == 0 or abs(v) > 1 << 70:
            break
    return v


def _first_failure_additive(t: ExitTest, value: Any, bound: int) -> int:
    """Smallest i > 0 whose test fails, without iterating: from the distance to the bound over the step (the
    values are taken without wrap-around). A count beyond twice the counter's range is Unknown: the counter
    would wrap before it got there."""
    delta = _ADDITIVE[t.op] * t.step
    if delta == 0:
        raise Unknown(f"{t.iv} does not change, so the loop never ends")
    if t.cmp in ("ne", "eq"):
        if t.cmp == "eq":
            return 1
        distance = bound - value(0)
        if distance % delta or distance // delta < 0:
            raise Unknown(f"{t.iv} steps past {bound} without equalling it (wraps around)")
        return distance // delta
    if (t.cmp in ("lt", "le", "lo", "ls") and delta < 0) or (t.cmp in ("gt", "ge", "hi", "hs") and delta > 0):
        raise Unknown(f"{t.iv} moves away from the bound {bound}")
    # the gap the counter closes by |delta| per iteration: `<` and `>` fail once it is used up, `<=` and `>=`
    # one iteration later
    gap = bound - value(0) if delta > 0 else value(0) - bound
    strict = t.cmp in ("lt", "lo", "gt", "hi")
    first = -(-gap // abs(delta)) if strict else gap // abs(delta) + 1
    if first > 2 << t.bits:
        raise Unknown(f"{t.iv} moves away from the bound {bound}")
    return max(1, first)
