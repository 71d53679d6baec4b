"""``gridsample demo``: every mode x padding on a synthetic test chart, as one PNG.

The chart (:func:`test_chart`, NumPy only, ``N x N`` uint8 RGB) has four
quadrants: a zone plate (rings whose frequency grows to the Nyquist limit
at the quadrant's edges: interpolation blur and aliasing), a Siemens star
(fine converging lines), text-like edges (a 5x7 pixel font at 1x, 2x, 3x)
above 1-pixel line gratings, and colour patches above a hue x brightness
ramp.

It is warped by a rotation (20 degrees), a zoom out (0.7: the corners of
the output show the padding) and a local swirl at the centre (a rotation
of up to 90 degrees fading as ``exp(-rho^2 / 0.09)``), with the 3 modes x
3 paddings.  The contact sheet (:func:`sheet_size`) has four rows of cells
of a caption strip, a panel and, beside it, a 4x pixel-replicated crop of
the box marked in yellow (around where the left edge of the chart, at
the text, lands: interpolation of sharp edges next to the padding).  Row 0 holds the
input chart and its crop, and the legend; rows 1-3 are linear, nearest,
cubic; columns are zeros, border, reflection.
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

import numba
import numpy as np

from .. import grid_sample
from .._precompile import Combination, Workers, finish, share
from .._registry import MODES as _MODES
from .._registry import PADDINGS as _PADDINGS
from ._errors import FAILURE, USAGE, CLIError, require
from ._io import atomic_path
from ._progress import count
from ._transforms import AffineSpec, base_coordinates, forward_matrix, theta_from_forward

__all__ = ["test_chart", "demo_grid", "sheet_size", "render_sheet", "run_demo",
           "MODES", "PADDINGS"]

MODES = tuple(m.name for m in _MODES if m.onnx)
PADDINGS = tuple(p.name for p in _PADDINGS if p.onnx)  # the ONNX three: 3 x 3 panels
ROTATE_DEG, ZOOM, SWIRL_DEG, SWIRL_SIGMA = 20.0, 0.7, 90.0, 0.3
#: Normalized input position (x, y) the crops are centred on: the chart's left
#: edge beside the text.
CROP_AT = (-0.85, 0.2)
#: The largest ``--size``: a sheet of 12 cells, each a panel and its crop, ~0.3 GB of RGB at 2048.
MAX_SIZE = 2048
CAPTION, MARGIN, GAP, CROP_ZOOM = 16, 8, 4, 4

# A 5x7 pixel font for the letters of the chart's text.
_GLYPHS = {
    "G": ".###.#...##....#.####...##...#.###.", "R": "####.#...##...#####.#.#..#..#.#...#",
    "I": ".###...#....#....#....#....#...###.", "D": "####.#...##...##...##...##...#####.",
    "S": ".#####....#.....###.....#....#####.", "A": ".###.#...##...#######...##...##...#",
    "M": "#...###.###.#.##.#.##...##...##...#", "P": "####.#...##...#####.#....#....#....",
    "L": "#....#....#....#....#....#....#####", "E": "######....#....####.#....#....#####",
    " ": "." * 35,
}


def _text_mask(text: str, scale: int) -> np.ndarray:
    """Boolean (7 scale, 6 len(text) scale) mask of ``text`` in the 5x7 font."""
    cells = [np.array([c == "#" for c in _GLYPHS[ch]]).reshape(7, 5) for ch in text]
    row = np.concatenate([np.pad(c, ((0, 0), (0, 1))) for c in cells], axis=1)
    return np.kron(row, np.ones((scale, scale), bool))


def _hsv_to_rgb(h, s, v):
    i = np.floor(h * 6.0) % 6
    f = h * 6.0 - np.floor(h * 6.0)
    p, q, t = v * (1 - s), v * (1 - f * s), v * (1 - (1 - f) * s)
    choices = [i == k for k in range(6)]
    r = np.select(choices, [v, q, p, p, t, v])
    g = np.select(choices, [t, v, v, q, p, p])
    b = np.select(choices, [p, p, t, v, v, q])
    return np.stack([r, g, b], -1)


def _zone_plate(h: int, w: int) -> np.ndarray:
    # Phase pi r^2 / n has local frequency r / n cycles per pixel: Nyquist
    # (0.5) at r = n / 2, the middle of the quadrant's edges.
    y, x = np.mgrid[0:h, 0:w].astype(np.float64)
    r2 = (x - (w - 1) / 2) ** 2 + (y - (h - 1) / 2) ** 2
    return 127.5 + 127.5 * np.cos(np.pi * r2 / min(h, w))


def _star(h: int, w: int, spokes: int = 32) -> np.ndarray:
    y, x = np.mgrid[0:h, 0:w].astype(np.float64)
    dx, dy = x - (w - 1) / 2, y - (h - 1) / 2
    inside = np.hypot(dx, dy) <= 0.47 * min(h, w)
    on = np.sin(spokes * np.arctan2(dy, dx)) > 0
    return np.where(inside & on, 0.0, 255.0)


def _text_and_lines(h: int, w: int) -> np.ndarray:
    out = np.full((h, w), 255.0)
    top = 2
    for scale in (1, 2, 3):
        mask = _text_mask("GRID SAMPLE", scale)[:, : max(w - 2, 0)]
        mh = mask.shape[0]
        if top + mh > (2 * h) // 3:
            break
        out[top:top + mh, 2:2 + mask.shape[1]][mask] = 0.0
        top += mh + 2 * scale
    # 1-pixel lines with periods 2, 3 and 4 in the bottom third, vertical then horizontal.
    y0 = (2 * h) // 3
    band = w // 4
    for j, period in enumerate((2, 3, 4)):
        cols = np.arange(j * band, (j + 1) * band)
        out[y0:, cols[cols % period == 0]] = 0.0
    rows = np.arange(y0, h)
    out[rows[rows % 2 == 0], 3 * band:] = 0.0
    return out


def _colours(h: int, w: int) -> np.ndarray:
    out = np.empty((h, w, 3))
    top = h // 2
    patches = [(1, 0, 0), (0, 1, 0), (0, 0, 1), (1, 1, 0),
               (0, 1, 1), (1, 0, 1), (1, 0.5, 0), (0.5, 0.5, 0.5)]
    for k, colour in enumerate(patches):
        r0, r1 = (k // 4) * top // 2, (k // 4 + 1) * top // 2
        c0, c1 = (k % 4) * w // 4, (k % 4 + 1) * w // 4
        out[r0:r1, c0:c1] = colour
    hue = (np.arange(w) + 0.5) / w
    val = 1.0 - 0.8 * (np.arange(h - top) + 0.5) / max(h - top, 1)
    out[top:] = _hsv_to_rgb(hue[None, :], np.ones((h - top, w)), val[:, None])
    return out * 255.0


def test_chart(size: int) -> np.ndarray:
    """The synthetic test chart, NumPy only.

    Parameters
    ----------
    size : int
        Side in pixels (>= 8).

    Returns
    -------
    ndarray of uint8, shape (size, size, 3)
        Zone plate (top left), Siemens star (top right), text-like edges and
        line gratings (bottom left), colour patches and a hue ramp (bottom
        right).  No frame: border padding repeats the chart's own edge pixels.
    """
    q0, q1 = size // 2, size - size // 2
    chart = np.empty((size, size, 3))
    chart[:q0, :q0] = _zone_plate(q0, q0)[..., None]
    chart[:q0, q0:] = _star(q0, q1)[..., None]
    chart[q0:, :q0] = _text_and_lines(q1, q0)[..., None]
    chart[q0:, q0:] = _colours(q1, q1)
    return np.rint(chart).astype(np.uint8)


def demo_grid(size: int, align_corners: bool = False) -> np.ndarray:
    """The demo's sampling grid, (1, size, size, 2) float32.

    An output point ``u`` (normalized) is first swirled about the centre,
    ``u' = R(phi) u`` with ``phi = SWIRL_DEG * exp(-|u|^2 / SWIRL_SIGMA^2)``,
    then mapped by ``theta`` of the rotation and zoom (see
    :mod:`._transforms` for ``theta``): ``g = theta[:, :2] u' + theta[:, 2]``.
    """
    theta = _demo_theta(size, align_corners)
    b = base_coordinates(size, align_corners)
    ux, uy = np.meshgrid(b, b, indexing="xy")
    phi = np.radians(SWIRL_DEG) * np.exp(-(ux ** 2 + uy ** 2) / SWIRL_SIGMA ** 2)
    c, s = np.cos(phi), np.sin(phi)
    sx, sy = c * ux - s * uy, s * ux + c * uy
    g = np.stack([theta[k, 0] * sx + theta[k, 1] * sy + theta[k, 2] for k in range(2)], -1)
    return g[None].astype(np.float32)


def _demo_theta(size: int, align_corners: bool) -> np.ndarray:
    spec = AffineSpec(rotate=ROTATE_DEG, scale=ZOOM)
    return theta_from_forward(forward_matrix(spec, 2), (size, size), align_corners)


def _crop_box(size: int, align_corners: bool) -> tuple:
    """(row, col, side) of the crop in the output: around where input point ``CROP_AT`` lands.

    The swirl is small there (1.5 degrees), so the output position of the
    normalized input point ``g`` is ``u = theta_lin^-1 (g - theta_t)``; its
    pixel is ``p = ((u + 1) S - 1) / 2`` (or ``(u + 1)(S - 1) / 2`` with
    align_corners).
    """
    theta = _demo_theta(size, align_corners)
    u = np.linalg.solve(theta[:, :2], np.array(CROP_AT) - theta[:, 2])
    p = (u + 1) * (size - 1) / 2 if align_corners else ((u + 1) * size - 1) / 2
    side = size // CROP_ZOOM
    col = int(np.clip(round(p[0] - side / 2), 0, size - side))
    row = int(np.clip(round(p[1] - side / 2), 0, size - side))
    return row, col, side


def sheet_size(size: int) -> tuple:
    """(width, height) of the contact sheet for panels of ``size`` pixels.

    Cells are ``CAPTION`` pixels of caption over the panel (``size``) and, to
    its right after ``GAP``, the crop (``4 (size // 4)``); 3 cells per row, 4
    rows, ``MARGIN`` around and between them::

        width  = MARGIN + 3 (size + GAP + 4 (size // 4) + MARGIN)
        height = MARGIN + 4 (CAPTION + size + MARGIN)
    """
    crop = CROP_ZOOM * (size // CROP_ZOOM)
    return (MARGIN + 3 * (size + GAP + crop + MARGIN), MARGIN + 4 * (CAPTION + size + MARGIN))


def _zoom(crop: np.ndarray) -> np.ndarray:
    return np.repeat(np.repeat(crop, CROP_ZOOM, axis=0), CROP_ZOOM, axis=1)


def _mark(panel: np.ndarray, box: tuple) -> np.ndarray:
    row, col, side = box
    out = panel.copy()
    yellow = np.array([255, 220, 0], np.uint8)
    out[row, col:col + side] = out[row + side - 1, col:col + side] = yellow
    out[row:row + side, col] = out[row:row + side, col + side - 1] = yellow
    return out


def render_sheet(chart, panels, times, box, size, align_corners, threads):
    """Compose the contact sheet (a PIL image) from the chart and the 9 panels."""
    image_mod = require("PIL.Image", "the demo's PNG")
    draw_mod = require("PIL.ImageDraw", "the demo's PNG")
    font = require("PIL.ImageFont", "the demo's PNG").load_default()
    width, height = sheet_size(size)
    sheet = image_mod.new("RGB", (width, height), (40, 40, 40))
    draw = draw_mod.Draw(sheet)
    row, col, side = box
    cell_w = size + GAP + CROP_ZOOM * side

    def cell(r, c, caption, panel, crop):
        x0 = MARGIN + c * (cell_w + MARGIN)
        y0 = MARGIN + r * (CAPTION + size + MARGIN)
        draw.text((x0, y0 + 2), caption, fill=(235, 235, 235), font=font)
        sheet.paste(image_mod.fromarray(panel), (x0, y0 + CAPTION))
        sheet.paste(image_mod.fromarray(_zoom(crop)), (x0 + size + GAP, y0 + CAPTION))

    # The input's crop: the same input point, at the output's pixel scale (side / ZOOM
    # input pixels would match it exactly; side keeps the 4x zoom).
    p = (np.array(CROP_AT) + 1) * size / 2 - 0.5
    in_col = int(np.clip(round(p[0] - side / 2), 0, size - side))
    in_row = int(np.clip(round(p[1] - side / 2), 0, size - side))
    cell(0, 0, f"input: {size}x{size} test chart", _mark(chart, (in_row, in_col, side)),
         chart[in_row:in_row + side, in_col:in_col + side])
    legend = [
        "gridsample demo: grid_sample in every mode x padding",
        f"warp: rotate {ROTATE_DEG:g} deg, zoom {ZOOM:g}, swirl {SWIRL_DEG:g} deg at the centre",
        f"align_corners={align_corners}; uint8 RGB, channel-last, float32 grid",
        "right of each panel: 4x crop (pixels replicated) of the yellow box",
        f"times: median of 3 calls after a warm-up, {count(threads, 'thread')}",
        "rows: linear, nearest, cubic; columns: zeros, border, reflection",
    ]
    x0, y0 = MARGIN + cell_w + MARGIN, MARGIN + CAPTION
    for k, line in enumerate(legend):
        draw.text((x0, y0 + 16 * k), line, fill=(235, 235, 235), font=font)
    for i, mode in enumerate(MODES):
        for j, padding in enumerate(PADDINGS):
            panel = panels[mode, padding]
            cell(i + 1, j, f"{mode} / {padding}: {times[mode, padding] * 1e3:.2f} ms",
                 _mark(panel, box), panel[row:row + side, col:col + side])
    return sheet


@contextlib.contextmanager
def _on_first_compile(start, started: list):
    """Within the block, the first compile Numba starts in this process (a kernel missing
    from the cache; loads from the cache do not count) calls ``start()`` first and appends
    its result to ``started`` (None if it failed: the compile goes on without it)."""
    from numba.core import event

    class Listener(event.Listener):
        def on_start(self, ev):
            if not started:
                try:
                    started.append(start())
                except Exception:  # noqa: BLE001 - e.g. no process can be spawned here
                    started.append(None)

        def on_end(self, ev):
            pass

    with event.install_listener("numba:compile", Listener()):
        yield


def run_demo(args) -> int:
    """Run ``gridsample demo``: render, time, write the sheet, print the times."""
    size = args.size
    if size < 32:
        raise CLIError(f"--size {size} is too small; the chart needs at least 32 pixels", USAGE)
    if size > MAX_SIZE:
        raise CLIError(f"--size {size} is too large; the demo's sheet takes at most "
                       f"{MAX_SIZE} pixels a panel", USAGE)
    out = Path(args.output)
    if out.suffix.lower() != ".png":
        raise CLIError(f"the demo writes a PNG; {out} does not end in .png", USAGE)
    if not out.parent.is_dir():
        raise CLIError(f"cannot write {out}: the directory {out.parent} does not exist", FAILURE)
    require("PIL.Image", "the demo's PNG")
    say = (lambda *a: None) if args.quiet else (lambda *a: print(*a, flush=True))
    align = args.align_corners
    threads = numba.get_num_threads()
    chart = test_chart(size)
    x = chart[None]  # (1, H, W, 3): channel-last
    grid = demo_grid(size, align)
    say(f"gridsample demo: {size}x{size} RGB uint8 test chart; rotate {ROTATE_DEG:g} deg, "
        f"zoom {ZOOM:g}, swirl {SWIRL_DEG:g} deg; {count(threads, 'thread')}")
    t0 = time.perf_counter()
    # A cold cache: the first panel's compile starts workers on the other panels' kernels,
    # and this process compiles its share of them after the first.
    jobs = os.cpu_count() or 1
    mine, theirs = share([Combination("uint8", "float32", 2, m, p, True, channels=3)
                          for m in MODES for p in PADDINGS][1:], jobs)
    started = []
    try:
        with _on_first_compile(lambda: Workers(theirs, jobs - 1) if theirs else None, started):
            grid_sample(x, grid, MODES[0], PADDINGS[0], align, channel_last=True)
    except BaseException:
        if started and started[0] is not None:
            started[0].cancel()
        raise
    if started:
        finish(mine, started[0])
    for mode in MODES:  # each kernel now loads from the cache
        for padding in PADDINGS:
            grid_sample(x, grid, mode, padding, align, channel_last=True)
    say(f"kernels ready in {time.perf_counter() - t0:.2f} s (the first run compiles them, "
        f"later runs load them from the cache)")
    say(f"{'mode':<9}{'padding':<12}{'ms':>8}")
    panels, times = {}, {}
    for mode in MODES:
        for padding in PADDINGS:
            runs = []
            for _ in range(3):
                t = time.perf_counter()
                y = grid_sample(x, grid, mode, padding, align, channel_last=True)
                runs.append(time.perf_counter() - t)
            panels[mode, padding] = y[0]
            times[mode, padding] = sorted(runs)[1]
            say(f"{mode:<9}{padding:<12}{times[mode, padding] * 1e3:>8.2f}")
    sheet = render_sheet(chart, panels, times, _crop_box(size, align), size, align, threads)
    try:
        with atomic_path(out) as tmp:
            # zlib level 3: measured 0.05 s and 424 kB for the default sheet, against
            # 0.35 s and 513 kB with optimize=True (level 9 and a filter search)
            sheet.save(tmp, format="PNG", compress_level=3)
    except OSError as exc:
        raise CLIError(f"cannot write {out}: {exc}", FAILURE) from None
    say(f"wrote {out} ({sheet.width}x{sheet.height} PNG, {os.path.getsize(out) / 1e3:.0f} kB)")
    return 0

