"""Opening a page in a real headless Chromium with the network cut off, and reading its screenshot.

The PNG reader is a small decoder of what Chromium writes (8-bit RGB or RGBA, not interlaced), so the tests
check pixels without an imaging library.
"""

from __future__ import annotations

import shutil
import struct
import subprocess
import zlib
from dataclasses import dataclass
from pathlib import Path

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

#: every name resolves to nothing and every connection goes to a closed port: nothing outside can load
NO_NETWORK = ["--proxy-server=127.0.0.1:9", "--host-resolver-rules=MAP * ~NOTFOUND"]


def chromium_args(profile: Path, *extra: str) -> list[str]:
    """The command line of a headless Chromium with its own profile folder and no network."""
    assert CHROMIUM is not None
    return [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={profile}",
            "--no-first-run", *NO_NETWORK, *extra]


def dump_dom(page: Path, profile: Path) -> str:
    """The page's DOM after loading (and after any script would have run), serialised."""
    done = subprocess.run(chromium_args(profile, "--virtual-time-budget=2000", "--dump-dom", page.as_uri()),
                          capture_output=True, text=True, timeout=120, check=True)
    return done.stdout


def screenshot(page: Path, profile: Path, png: Path, size: tuple[int, int]) -> None:
    """A screenshot of the page's top `size` pixels."""
    subprocess.run(chromium_args(profile, f"--window-size={size[0]},{size[1]}", f"--screenshot={png}",
                                 page.as_uri()), capture_output=True, timeout=120, check=True, cwd=png.parent)


@dataclass
class Image:
    width: int
    height: int
    rows: list[bytes]  # RGB triples, row by row

    def pixel(self, x: int, y: int) -> tuple[int, int, int]:
        row = self.rows[y]
        return row[3 * x], row[3 * x + 1], row[3 * x + 2]


def _paeth(a: int, b: int, c: int) -> int:
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    if pa <= pb and pa <= pc:
        return a
    return b if pb <= pc else c


def _unfilter(kind: int, line: bytearray, prev: bytearray, bpp: int) -> None:
    """Undo one scanline's PNG filter in place (filters 0-4 of the PNG specification)."""
    if kind == 1:
        for i in range(bpp, len(line)):
            line[i] = (line[i] + line[i - bpp]) & 0xFF
    elif kind == 2:
        for i in range(len(line)):
            line[i] = (line[i] + prev[i]) & 0xFF
    elif kind == 3:
        for i in range(len(line)):
            left = line[i - bpp] if i >= bpp else 0
            line[i] = (line[i] + ((left + prev[i]) >> 1)) & 0xFF
    elif kind == 4:
        for i in range(len(line)):
            left = line[i - bpp] if i >= bpp else 0
            up_left = prev[i - bpp] if i >= bpp else 0
            line[i] = (line[i] + _paeth(left, prev[i], up_left)) & 0xFF


def read_png(path: Path) -> Image:
    """Decode an 8-bit RGB/RGBA non-interlaced PNG into RGB rows."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, header = 8, bytearray(), b""
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", header)
    assert depth == 8 and colour in (2, 6) and interlace == 0, (depth, colour, interlace)
    bpp = 3 if colour == 2 else 4
    raw = zlib.decompress(bytes(idat))
    stride = width * bpp
    prev, rows = bytearray(stride), []
    for y in range(height):
        start = y * (stride + 1)
        line = bytearray(raw[start + 1:start + 1 + stride])
        _unfilter(raw[start], line, prev, bpp)
        rows.append(bytes(line) if bpp == 3 else bytes(b for i, b in enumerate(line) if i % 4 != 3))
        prev = line
    return Image(width, height, rows)
