"""The HTML report of `kiln bench` renders its plots in a real browser, offline.

Runs `kiln bench` against the fake server of test_bench.py, opens the HTML report in headless
Chromium (Debian package `chromium`), screenshots it and checks that every plotted series left
pixels of its colour. Skipped when the kiln binary or Chromium is missing.
"""

from __future__ import annotations

import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest

from test_bench import FakeOpenAI, kiln_binary, run_bench

# Series colours of the report's SVG plots (src/bench/report_html.cc).
SERIES = {
    "median": (0x1F, 0x77, 0xB4),
    "p90": (0xFF, 0x7F, 0x0E),
    "p99": (0xD6, 0x27, 0x28),
    "output tokens/s": (0x2C, 0xA0, 0x2C),
    "total tokens/s": (0x94, 0x67, 0xBD),
}


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        path = shutil.which(name)
        if path:
            return path
    pytest.skip("Chromium is not installed (Debian: apt-get install chromium)")


def read_png(path: Path) -> tuple[int, int, list[bytes]]:
    """(width, height, rows of RGBA bytes) of an 8-bit RGB/RGBA non-interlaced PNG."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, header = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height, depth, color, _, _, interlace = header
    assert depth == 8 and color in (2, 6) and interlace == 0, header
    channels = 4 if color == 6 else 3
    raw = zlib.decompress(idat)
    stride = width * channels
    rows, prev = [], bytearray(stride)
    for y in range(height):
        kind = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up = prev[i]
            up_left = prev[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + left) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + up) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + ((left + up) >> 1)) & 0xFF
            elif kind == 4:
                p = left + up - up_left
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - up_left)
                pred = left if pa <= pb and pa <= pc else up if pb <= pc else up_left
                line[i] = (line[i] + pred) & 0xFF
        rows.append(bytes(line) if channels == 4 else bytes(
            b for j in range(width) for b in (*line[j * 3:j * 3 + 3], 255)))
        prev = line
    return width, height, rows


def test_html_report_plots_render_in_chromium(tmp_path):
    kiln = kiln_binary()
    browser = chromium()
    server = FakeOpenAI(ttft=0.03, itl=0.005)
    try:
        html = tmp_path / "report.html"
        run_bench(kiln, ["--target", server.url, "--profile", "sweep", "--rate", "4",
                         "--max-seconds", "1.5", "--max-concurrency", "8",
                         "--data", "prompt_tokens=16,output_tokens=8", "--output", str(html),
                         "--no-progress"])
    finally:
        server.close()
    shot = tmp_path / "shot.png"
    # No network: the page must not need any. --no-sandbox: CI runs as root.
    subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                    "--window-size=1400,2000", f"--screenshot={shot}", html.as_uri()],
                   capture_output=True, timeout=120, check=True)
    width, height, rows = read_png(shot)
    assert (width, height) == (1400, 2000)
    counts = {name: 0 for name in SERIES}
    boxes = {name: [width, height, 0, 0] for name in SERIES}
    for name, rgb in SERIES.items():
        needle = bytes(rgb)  # line centres and markers are drawn in the exact colour
        box = boxes[name]
        for y, row in enumerate(rows):
            at = row.find(needle)
            while at >= 0:
                if at % 4 == 0:  # a whole pixel, not bytes straddling two
                    counts[name] += 1
                    x = at // 4
                    box[0], box[1] = min(box[0], x), min(box[1], y)
                    box[2], box[3] = max(box[2], x), max(box[3], y)
                at = row.find(needle, at + 1)
    for name, count in counts.items():
        assert count > 40, f"series {name!r} drew {count} pixels: plots blank? {counts}"
    # Lines span the plot, not just a legend swatch: the median series covers a wide area.
    x0, y0, x1, y1 = boxes["median"]
    assert x1 - x0 > 300 and y1 - y0 > 100, boxes["median"]
