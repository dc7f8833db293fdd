"""Where the analysed text writes what a report talks about: each kernel's name and the end of its parameter
list, the `<<<>>>` launch sites, and each finding's range as an editor shows it.

Plain data only (`locate` reads the text): the report holds a `Places` once it has been asked for, so that
its consumers place lenses, hints, hovers and diagnostics without reading the source text themselves. Lines
and columns are 1-based, columns count characters, and ends are exclusive, as findings count them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from kerncast.analysis.finding import Span, TextEdit


@dataclass(frozen=True, slots=True)
class KernelPlace:
    """Where a kernel is written: its name, the point just after the `)` that closes its parameter list (the
    end of its name's line when none is known), and the `// kerncast:` launch annotation line that would go
    above its declaration (None where it cannot be placed: a PTX file, a kernel the source model lacks)."""

    name: Span
    signature_end: tuple[int, int]
    annotation: TextEdit | None = None


@dataclass(frozen=True, slots=True)
class LaunchPlace:
    """A `<<<>>>` launch in the text: from the kernel's name to the end of `<<<` (the end of the name's line
    when the configuration starts on another), and the mangled name of the reported kernel it launches."""

    span: Span
    kernel: str


@dataclass(frozen=True, slots=True)
class FindingPlace:
    """Where an editor shows a finding and each of its related locations (in the order of `related`)."""

    span: Span
    related: tuple[Span, ...] = ()


@dataclass(slots=True)
class Places:
    """A report's places in the text it was made from (`lines`, split at LSP's line breaks)."""

    lines: Sequence[str]
    #: by the identity of the report's `Finding` objects (the report keeps them alive, so no id is reused)
    findings: dict[int, FindingPlace] = field(default_factory=dict)
    #: the file's own kernels (`FileReport.kernels`) by mangled name, and the launches of reported kernels;
    #: None until asked for (`locate.kernel_places`): they need the source model of the text, which the
    #: diagnostics of a save do not wait for
    kernels: dict[str, KernelPlace] | None = None
    launches: tuple[LaunchPlace, ...] | None = None

    def launches_on(self, line: int) -> list[LaunchPlace]:
        """The launches that start on a line."""
        return [site for site in self.launches or () if site.span.line == line]
