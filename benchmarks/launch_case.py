"""One kernel of the repository at one launch: what the validation and measurement scripts compare and run."""

from __future__ import annotations

from dataclasses import dataclass

from kerncast.analysis.launch import LaunchOverrides


@dataclass(frozen=True)
class LaunchCase:
    """`file` relative to the repository root, the kernel's name, grid and block as `X[,Y[,Z]]`, scalar
    parameters as `NAME=VALUE`, dynamic shared memory per block in bytes (None: the launch site's)."""

    file: str
    kernel: str
    grid: str
    block: str
    params: tuple[str, ...] = ()
    smem: int | None = None

    def overrides(self) -> LaunchOverrides:
        """The launch as the analysis takes it from the command line."""
        return LaunchOverrides.from_strings(grid=self.grid, block=self.block, params=list(self.params),
                                            smem=self.smem)
