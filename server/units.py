"""Numbers for people: times and energies in the unit that fits, shared by the text report and the editor views.

Kept apart from `convert` (which builds LSP objects) so that the command line's text output does not load the
LSP type library.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kerncast.analysis.timing.estimate import TimeEstimate


def _scaled(value: Any, units: tuple[str, str, str, str]) -> str | None:
    """`value` (in the second unit) with three significant digits in the unit that fits: milli, base, kilo, mega."""
    if not isinstance(value, int | float):
        return None
    small, base, kilo, mega = units
    if value >= 1e6:
        return f"{value / 1e6:.3g} {mega}"
    if value >= 1e3:
        return f"{value / 1e3:.3g} {kilo}"
    if value >= 1:
        return f"{value:.3g} {base}"
    return f"{value * 1e3:.3g} {small}"


def fmt_time(us: Any) -> str | None:
    """A time given in µs, e.g. `12.3 µs`, `4.1 ms`."""
    return _scaled(us, ("ns", "µs", "ms", "s"))


def fmt_energy_uj(uj: Any) -> str | None:
    """An energy given in µJ, e.g. `850 µJ`, `1.1 mJ`."""
    return _scaled(uj, ("nJ", "µJ", "mJ", "J"))


def time_range(t: TimeEstimate) -> tuple[str, str] | None:
    """A report time's range as two formatted times, or None when it has none."""
    rng = t.range_us
    if rng is None:
        return None
    lo, hi = fmt_time(rng[0]), fmt_time(rng[1])
    return (lo, hi) if lo and hi else None


#: the drivers a one-line explanation names (the JSON has them all)
TOP_DRIVERS = 4


def drivers_text(shares: Sequence[tuple[str, float]], top: int = TOP_DRIVERS) -> str:
    """"DRAM traffic 41% of dynamic power, FP32 arithmetic 22%, ..." from (driver, share) pairs."""
    parts = [f"{name} {share:.0%}" for name, share in shares[:top] if share >= 0.005]
    if not parts:
        return ""
    return f"{parts[0]} of dynamic power" + "".join(f", {p}" for p in parts[1:])


def models_text(models: Mapping[str, Mapping[str, Any]]) -> str:
    """Both models' answers on one line: "statistical 269 W (109-565 W), events 247 W (133-439 W)"."""
    out = []
    for name in ("statistical", "events"):
        m = models.get(name)
        if not m or not isinstance(m.get("watts"), int | float):
            continue
        iv = m.get("interval") or ()
        span = f" ({iv[0]:.0f}-{iv[1]:.0f} W)" if len(iv) == 2 and all(isinstance(v, int | float) for v in iv) else ""
        out.append(f"{name} {m['watts']:.0f} W{span}")
    return ", ".join(out)
