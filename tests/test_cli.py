"""End-to-end tests of the ``gridsample`` command (``gridsample.cli``).

The command runs in a subprocess (``python -m gridsample.cli``, and once the
installed ``gridsample`` script) on files in ``tmp_path``; its outputs are
compared with ``gridsample.grid_sample`` on the same arrays, with the grid
built here independently: ``affine_grid`` with a ``theta`` derived by hand
below, or the flow formulas written out.  Integer outputs must match
exactly.  Error paths run in-process through ``main`` (cheaper) and a few in
a subprocess; each must exit non-zero with its message and leave no file.

Grids: the CLI samples on float32 grids except for float64 (and complex128)
data, which get float64 grids (README, "Command line").
"""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import gridsample
from gridsample.cli import main

Image = pytest.importorskip("PIL.Image")
tifffile = pytest.importorskip("tifffile")

REPO = Path(__file__).resolve().parents[1]


# --------------------------------------------------------------------------- helpers

def run(*args, cwd=None, script=False):
    """Run the command in a new process; stdout/stderr are pipes (no TTY: no bar)."""
    if script:
        exe = Path(sys.executable).parent / ("gridsample.exe" if os.name == "nt" else "gridsample")
        if not exe.exists():
            pytest.skip("the gridsample script is not installed next to this Python")
        cmd = [str(exe)]
    else:
        cmd = [sys.executable, "-m", "gridsample.cli"]
    return subprocess.run(cmd + [str(a) for a in args], capture_output=True, text=True,
                          cwd=cwd, timeout=600)


def check_ok(proc):
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr


def steps(sizes, align):
    """Normalized units per pixel on axes of these sizes: 2/S, or 2/(S-1) with align_corners.

    From g = (2p + 1)/S - 1 (False) and g = 2p/(S - 1) - 1 (True): dg/dp.
    """
    return np.array([2.0 / (n - 1) if align else 2.0 / n for n in sizes])


def theta_rotate_scale_translate(deg, k, t, out_spatial, align):
    """theta of ``--rotate deg --scale k --translate tx ty [--translate-z tz]``.

    The content moves by ``p' = R k p + t`` in centred output pixels, with the
    in-plane rotation ``R = [[c, s], [-s, c]]`` (counter-clockwise with y
    down; identity on z).  Output pixel ``p'`` therefore reads the input at
    ``p = R^T (p' - t) / k``.  With ``g = step * p`` on each axis (the centre
    is g = 0 in both conventions), ``g_in[i] = step[i] / k * sum_j R^T[i, j]
    (g_out[j] / step[j] - t[j])``: linear part ``R^T[i, j] step[i] / (k
    step[j])``, translation ``-step[i] (R^T t)[i] / k``.
    """
    r = len(out_spatial)
    a = np.radians(deg)
    c, s = np.cos(a), np.sin(a)
    rt = np.eye(r)
    rt[:2, :2] = [[c, -s], [s, c]]
    st = steps(out_spatial[::-1], align)  # x, y[, z]
    lin = rt * st[:, None] / st[None, :] / k
    trans = -(rt @ np.asarray(t, float)) * st / k
    return np.concatenate([lin, trans[:, None]], 1)


def grid_dtype(x):
    return np.float64 if x.dtype in (np.float64, np.complex128) else np.float32


def expected(x, spatial_dims, grid, mode="linear", padding="zeros", align=False):
    """grid_sample on a channel-last image/volume ``x`` ((*spatial) or (*spatial, C))."""
    xin = x.reshape(1, *x.shape[:spatial_dims], -1)
    y = gridsample.grid_sample(xin, grid.astype(grid_dtype(x)), mode, padding, align,
                               channel_last=True)
    return y.reshape(*grid.shape[1:-1], *x.shape[spatial_dims:])


def affine_expected(x, spatial_dims, theta, out_spatial=None, **kw):
    out_spatial = tuple(out_spatial or x.shape[:spatial_dims])
    grid = gridsample.affine_grid(theta[None], (1, 1, *out_spatial), kw.get("align", False))
    return expected(x, spatial_dims, grid, **kw)


def smooth_image(shape, dtype=np.uint8, seed=0):
    """Low-frequency content (JPEG-friendly), scaled to the dtype's range."""
    rng = np.random.default_rng(seed)
    h, w = shape[:2]
    y, x = np.mgrid[0:h, 0:w] / max(h, w)
    chans = shape[2] if len(shape) == 3 else 1
    planes = [0.5 + 0.25 * np.sin(6 * x + rng.uniform(0, 6)) + 0.25 * np.cos(5 * y + k)
              for k in range(chans)]
    a = np.stack(planes, -1).reshape(shape)
    return np.rint(a * np.iinfo(dtype).max).astype(dtype)


def random_array(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind in "ui":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)
    return rng.standard_normal(shape).astype(dtype)


def assert_no_leftovers(directory, allowed=()):
    """Nothing but the ``allowed`` names in ``directory``: no output, no temporary file."""
    names = sorted(p.name for p in Path(directory).iterdir())
    assert names == sorted(allowed), names


# --------------------------------------------------------------------------- round trips

def test_png_round_trips_every_depth_and_channel_count(tmp_path):
    from gridsample.cli._png16 import encode_png16, read_png16

    src, out = tmp_path / "in", tmp_path / "out"
    src.mkdir()
    out.mkdir()
    h, w = 24, 32
    arrays = {
        "grey8": random_array((h, w), np.uint8, 1),
        "grey16": random_array((h, w), np.uint16, 2),
        "la8": random_array((h, w, 2), np.uint8, 3),
        "rgb8": random_array((h, w, 3), np.uint8, 4),
        "rgba8": random_array((h, w, 4), np.uint8, 5),
        "la16": random_array((h, w, 2), np.uint16, 6),
        "rgb16": random_array((h, w, 3), np.uint16, 7),
        "rgba16": random_array((h, w, 4), np.uint16, 8),
    }
    for name, a in arrays.items():
        if a.dtype == np.uint16 and a.ndim == 3:
            (src / f"{name}.png").write_bytes(encode_png16(a))  # pillow cannot write these
        else:
            Image.fromarray(a).save(src / f"{name}.png")
    proc = run("warp", src / "*.png", out, "--rotate", 30, "--scale", 1.25, "--translate", 3, -2,
               "--mode", "cubic", "--padding", "reflection")
    check_ok(proc)
    assert len(proc.stdout.strip().splitlines()) == len(arrays)
    theta = theta_rotate_scale_translate(30, 1.25, (3, -2), (h, w), False)
    for name, a in arrays.items():
        want = affine_expected(a, 2, theta, mode="cubic", padding="reflection")
        path = out / f"{name}.png"
        if a.dtype == np.uint16 and a.ndim == 3:
            got = read_png16(path.read_bytes())
            if a.shape[-1] > 2:  # pillow reads 16-bit RGB(A) PNGs as 8 bits: the high bytes
                with Image.open(path) as im:
                    assert np.array_equal(np.asarray(im), (want >> 8).astype(np.uint8))
        else:
            with Image.open(path) as im:
                got = np.asarray(im)
        assert got.dtype == a.dtype and got.shape == a.shape, name
        assert np.array_equal(got, want), name


def test_tiff_npy_npz_round_trips_images_and_volumes(tmp_path):
    src, out = tmp_path / "in", tmp_path / "out"
    src.mkdir()
    out.mkdir()
    images = {"grey8.tif": random_array((20, 26), np.uint8, 1),
              "grey16.tiff": random_array((20, 26), np.uint16, 2),
              "rgb8.tif": random_array((20, 26, 3), np.uint8, 3),
              "rgb16.tif": random_array((20, 26, 4), np.uint16, 4)}
    for name, a in images.items():
        tifffile.imwrite(src / name, a, photometric="rgb" if a.ndim == 3 else "minisblack")
    # A multi-page TIFF as other tools write it (no shape metadata): pages are depth.
    vol16 = random_array((6, 10, 12), np.uint16, 5)
    tifffile.imwrite(src / "vol16.tif", vol16, metadata=None)
    vol32 = random_array((6, 10, 12), np.float32, 6)
    np.save(src / "vol32.npy", vol32)
    vol64 = random_array((5, 8, 9, 2), np.float64, 7)  # (D, H, W, C)
    np.savez(src / "vol64.npz", vol=vol64)
    names = list(images) + ["vol16.tif", "vol32.npy", "vol64.npz"]
    proc = run("warp", *[src / n for n in names], out, "--rotate", 30, "--scale", 1.25,
               "--translate", 3, -2)
    check_ok(proc)
    for name, a in images.items():
        want = affine_expected(a, 2, theta_rotate_scale_translate(30, 1.25, (3, -2), a.shape[:2],
                                                                  False))
        got = tifffile.imread(out / name)
        assert got.dtype == a.dtype and np.array_equal(got, want), name
    # Volumes: --rotate is the rotation about z, the scale applies to z too.
    def th(a):
        return theta_rotate_scale_translate(30, 1.25, (3, -2, 0), a.shape[:3], False)

    with tifffile.TiffFile(out / "vol16.tif") as tif:
        got = tif.series[0].asarray()
        assert len(tif.pages) == 6
    assert got.dtype == np.uint16 and np.array_equal(got, affine_expected(vol16, 3, th(vol16)))
    got = np.load(out / "vol32.npy")
    np.testing.assert_allclose(got, affine_expected(vol32, 3, th(vol32)), rtol=1e-6, atol=1e-6)
    with np.load(out / "vol64.npz") as z:
        assert z.files == ["vol"]
        got = z["vol"]
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, affine_expected(vol64, 3, th(vol64)), rtol=1e-12, atol=1e-12)


def test_volume_3d_rotation_output_size_nearest_border_align(tmp_path):
    vol = random_array((10, 12, 14), np.float32, 3)  # (D, H, W)
    np.save(tmp_path / "vol.npy", vol)
    check_ok(run("warp", tmp_path / "vol.npy", tmp_path / "out.tif", "--rotate-x", 30,
                 "--size", "16x12x8", "--mode", "nearest", "--padding", "border",
                 "--align-corners"))
    # --rotate-x 30: content moves y' = y c + z s, z' = -y s + z c; output reads the input at
    # y = c y' - s z', z = s y' + c z'.  In normalized units (g = step * p per axis):
    # gy_in = c gy - s (sy / sz) gz,  gz_in = s (sz / sy) gy + c gz;  x is unchanged.
    out_spatial = (8, 12, 16)  # --size is W x H x D
    sx, sy, sz = steps(out_spatial[::-1], True)
    c, s = np.cos(np.radians(30)), np.sin(np.radians(30))
    theta = np.array([[1, 0, 0, 0], [0, c, -s * sy / sz, 0], [0, s * sz / sy, c, 0]])
    want = affine_expected(vol, 3, theta, out_spatial, mode="nearest", padding="border",
                           align=True)
    got = tifffile.imread(tmp_path / "out.tif")
    assert got.shape == (8, 12, 16) and got.dtype == np.float32
    assert np.array_equal(got, want)


def test_nifti_round_trip_keeps_header(tmp_path):
    """dtype, affine and the sform/qform codes survive; no transform is the identity.
    (World-space transforms: tests/test_cli_world.py.)"""
    nib = pytest.importorskip("nibabel")
    data = random_array((9, 10, 11), np.int16, 4)
    affine = np.diag([2.0, 2.0, 3.0, 1.0])
    img = nib.Nifti1Image(data, affine)
    img.set_sform(affine, code=4)
    img.set_qform(affine, code=1)
    nib.save(img, str(tmp_path / "scan.nii.gz"))
    check_ok(run("warp", tmp_path / "scan.nii.gz", tmp_path / "out.nii.gz"))
    out = nib.load(str(tmp_path / "out.nii.gz"))
    got = np.asarray(out.dataobj)
    assert got.dtype == np.int16
    assert np.array_equal(out.affine, affine)
    assert (int(out.header["sform_code"]), int(out.header["qform_code"])) == (4, 1)
    assert np.array_equal(got, data)


def test_jpeg_input_and_output(tmp_path):
    a = smooth_image((30, 40, 3))
    Image.fromarray(a).save(tmp_path / "in.jpg", quality=90)
    check_ok(run("warp", tmp_path / "in.jpg", tmp_path / "out.npy", "--rotate", 10))
    with Image.open(tmp_path / "in.jpg") as im:
        decoded = np.asarray(im)  # what pillow reads of the JPEG is the input
    theta = theta_rotate_scale_translate(10, 1.0, (0, 0), (30, 40), False)
    assert np.array_equal(np.load(tmp_path / "out.npy"), affine_expected(decoded, 2, theta))

    Image.fromarray(a).save(tmp_path / "in.png")
    check_ok(run("warp", tmp_path / "in.png", tmp_path / "out.jpg", "--rotate", 10,
                 "--mode", "cubic", "--padding", "border"))
    with Image.open(tmp_path / "out.jpg") as im:
        assert im.format == "JPEG" and im.mode == "RGB"
        got = np.asarray(im).astype(float)
    want = affine_expected(a, 2, theta, mode="cubic", padding="border").astype(float)
    assert np.abs(got - want).mean() < 1.5  # quality 95, 4:4:4, smooth content


def test_matrix_file_normalized_theta(tmp_path):
    a = random_array((18, 22, 3), np.uint8, 9)
    Image.fromarray(a).save(tmp_path / "in.png")
    theta = np.array([[0.9, -0.2, 0.1], [0.25, 0.8, -0.05]])
    np.save(tmp_path / "theta.npy", theta)
    check_ok(run("warp", tmp_path / "in.png", tmp_path / "out.png", "--matrix",
                 tmp_path / "theta.npy"))
    with Image.open(tmp_path / "out.png") as im:
        assert np.array_equal(np.asarray(im), affine_expected(a, 2, theta))


def test_matrix_file_pixels_inverted_with_output_size(tmp_path):
    a = random_array((18, 22), np.uint16, 10)
    tifffile.imwrite(tmp_path / "in.tif", a)
    # The file maps input pixels to output pixels: p_out = 2 p_in + (5, -3).
    (tmp_path / "m.txt").write_text("2, 0, 5\n0, 2, -3\n0, 0, 1\n")
    check_ok(run("warp", tmp_path / "in.tif", tmp_path / "out.tif", "--matrix",
                 tmp_path / "m.txt", "--matrix-units", "pixels", "--invert-matrix",
                 "--size", "30x25"))
    # Output pixel p reads p_in = (p - t) / 2.  With p = g_out / s_out + c_out and
    # g_in = s_in (p_in - c_in) (c = (S - 1) / 2, s = 2 / S):
    # g_in = s_in / (2 s_out) g_out + s_in ((c_out - t) / 2 - c_in), per axis.
    s_in, s_out = steps((22, 18), False), steps((30, 25), False)
    c_in, c_out = (np.array([22, 18]) - 1) / 2, (np.array([30, 25]) - 1) / 2
    t = np.array([5.0, -3.0])
    theta = np.zeros((2, 3))
    theta[[0, 1], [0, 1]] = s_in / (2 * s_out)
    theta[:, 2] = s_in * ((c_out - t) / 2 - c_in)
    got = tifffile.imread(tmp_path / "out.tif")
    assert got.shape == (25, 30)
    assert np.array_equal(got, affine_expected(a, 2, theta, (25, 30)))


def test_flow_relative_pixels(tmp_path):
    h, w = 20, 24
    a = random_array((h, w, 3), np.uint8, 11)
    Image.fromarray(a).save(tmp_path / "in.png")
    flow = np.random.default_rng(0).uniform(-3, 3, (h, w, 2)).astype(np.float32)
    np.save(tmp_path / "flow.npy", flow)
    check_ok(run("warp", tmp_path / "in.png", tmp_path / "out.png", "--flow",
                 tmp_path / "flow.npy"))
    # Output pixel p reads the input at p + flow(p): in normalized units the identity
    # position (affine_grid of the identity) plus flow * (2 / S) per axis.
    base = gridsample.affine_grid(np.array([[[1.0, 0, 0], [0, 1.0, 0]]]), (1, 1, h, w))
    grid = base + flow.astype(np.float64)[None] * (2.0 / np.array([w, h]))
    with Image.open(tmp_path / "out.png") as im:
        assert np.array_equal(np.asarray(im), expected(a, 2, grid))


def test_padding_per_axis_and_fill_value(tmp_path, capsys):
    a = random_array((18, 22, 3), np.uint8, 21)
    Image.fromarray(a).save(tmp_path / "in.png")
    theta = theta_rotate_scale_translate(25, 0.7, (4, -3), (18, 22), False)
    grid = gridsample.affine_grid(theta[None], (1, 1, 18, 22), False)
    xin = a.reshape(1, 18, 22, 3)
    check_ok(run("warp", tmp_path / "in.png", tmp_path / "wrap.png", "--rotate", 25, "--scale",
                 0.7, "--translate", 4, -3, "--padding", "wrap", "border"))
    want = gridsample.grid_sample(xin, grid.astype(np.float32), "linear", ("wrap", "border"),
                                  channel_last=True)[0]
    with Image.open(tmp_path / "wrap.png") as im:
        assert np.array_equal(np.asarray(im), want)
    check_ok(run("warp", tmp_path / "in.png", tmp_path / "fill.png", "--rotate", 25, "--scale",
                 0.7, "--translate", 4, -3, "--padding", "constant", "--fill-value", 255, 0,
                 300))
    want = gridsample.grid_sample(xin, grid.astype(np.float32), "linear", "constant",
                                  channel_last=True, fill_value=[255, 0, 300])[0]
    with Image.open(tmp_path / "fill.png") as im:
        got = np.asarray(im)
    assert np.array_equal(got, want) and (got[0, 0] == [255, 0, 255]).all()  # 300 saturates
    for argv, message in (
            (["--padding", "wrap", "wrap", "wrap"], "give one padding, or one per axis"),
            (["--padding", "wrap", "--fill-value", "1"], "--fill-value applies to --padding "
                                                          "constant"),
            (["--padding", "constant", "--fill-value", "1", "2"], "one per channel (3")):
        assert main(["warp", str(tmp_path / "in.png"), str(tmp_path / "bad.png"), "--rotate",
                     "5", *argv]) == 2
        assert message in capsys.readouterr().err
    assert not (tmp_path / "bad.png").exists()


def test_flow_absolute_normalized_sets_output_size(tmp_path):
    a = random_array((16, 20), np.uint8, 12)
    Image.fromarray(a).save(tmp_path / "in.png")
    grid = np.random.default_rng(1).uniform(-1.1, 1.1, (1, 7, 9, 2))
    np.save(tmp_path / "grid.npy", grid)  # a leading batch axis of 1 is accepted
    check_ok(run("warp", tmp_path / "in.png", tmp_path / "out.png", "--flow",
                 tmp_path / "grid.npy", "--flow-type", "absolute", "--flow-units", "normalized",
                 "--align-corners"))
    with Image.open(tmp_path / "out.png") as im:
        got = np.asarray(im)
    assert got.shape == (7, 9)
    assert np.array_equal(got, expected(a, 2, grid, align=True))


# --------------------------------------------------------------------------- other commands

def test_installed_script_info():
    proc = run("info", script=True)
    check_ok(proc)
    assert proc.stdout.startswith(f"gridsample {gridsample.__version__}")
    for word in ("kernels:", "threads:", "code:", "vector width", "strategies:",
                 "explicit vectors", "cache:", "pillow", "tifffile", "gridsample.onnx"):
        assert word in proc.stdout


def test_python_m_gridsample_is_the_command():
    proc = subprocess.run([sys.executable, "-m", "gridsample", "info"], capture_output=True,
                          text=True, timeout=600)
    check_ok(proc)
    assert proc.stdout.startswith(f"gridsample {gridsample.__version__}")


def test_demo_writes_contact_sheet(tmp_path):
    proc = run("demo", "--output", tmp_path / "sheet.png", "--size", 64)
    check_ok(proc)
    with Image.open(tmp_path / "sheet.png") as im:
        assert im.format == "PNG" and im.mode == "RGB"
        # 3 cells per row: panel (64) + gap (4) + 4x crop of 16 px (64), margins of 8;
        # 4 rows (input + 3 modes) of caption (16) + panel (64), margins of 8.
        assert im.size == (8 + 3 * (64 + 4 + 64 + 8), 8 + 4 * (16 + 64 + 8))
    timed = [line for line in proc.stdout.splitlines() if line.split()[:1] in (
        ["linear"], ["nearest"], ["cubic"])]
    assert len(timed) == 9 and all(float(line.split()[-1]) >= 0 for line in timed)
    assert_no_leftovers(tmp_path, ["sheet.png"])


@pytest.mark.skipif(not (REPO / "benchmarks" / "bench_forward.py").is_file(),
                    reason="needs the source checkout's benchmarks/")
def test_bench_runs_the_benchmark_table(tmp_path):
    # From another directory: the editable install finds benchmarks/ beside src/.
    proc = run("bench", "--case", "volume 1x2x96", "--repeats", 1, "--no-compile", "--peers", "",
               cwd=tmp_path)
    check_ok(proc)
    assert "| case | gridsample ms |" in proc.stdout
    assert "| volume 1x2x96³ nearest |" in proc.stdout


@pytest.mark.skipif(not (REPO / "benchmarks" / "bench_forward.py").is_file(),
                    reason="needs the source checkout's benchmarks/")
@pytest.mark.parametrize("options, says", [
    (["--peers", "bogus"], "argument --peers: 'bogus' is not a peer; choose from torch"),
    (["--baseline", "no-such-revision"], "argument --baseline: 'no-such-revision' is not a git "
                                         "revision"),
    (["--repeats", "-3"], "argument --repeats: must be at least 1, not -3"),
    (["--repeats", "0"], "argument --repeats: must be at least 1, not 0"),
    (["--threads", "0"], "argument --threads: must be from 1 to"),
    (["--threads", "100000"], "argument --threads: must be from 1 to"),
    (["--case", "no such case"], "argument --case: no case name contains 'no such case'; "
                                 "the names are 'image 1x3x1024² linear smooth'"),
    (["--markdown", "/no/such/folder/table.md"], "argument --markdown: the folder "
                                                 "'/no/such/folder' does not exist"),
    (["--markdown", "/"], "argument --markdown: '/' is a folder; give a file"),
    (["--no-such-option"], "unrecognized arguments: --no-such-option"),
])
def test_bench_refuses_a_bad_option_in_one_line(options, says, capsys):
    # Before anything is timed (a bad --markdown used to fail after the whole run); the small
    # cases only, should a check be missing.
    few = [] if "--case" in options else ["--case", "small", "--repeats", "1", "--peers", ""]
    assert main(["bench", *few, *options]) == 2
    err = capsys.readouterr().err
    assert err.startswith("gridsample: error: bench: " + says), err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_bench_without_a_checkout_says_so(tmp_path, monkeypatch, capsys):
    from gridsample.cli import _bench

    # An installed (non-editable) package: no benchmarks/ two levels above it, none importable.
    monkeypatch.setattr(_bench.gridsample, "__file__",
                        str(tmp_path / "site-packages" / "gridsample" / "__init__.py"))
    monkeypatch.setattr(sys, "path", [p for p in sys.path
                                      if p not in ("", str(REPO), os.getcwd())])
    for name in [m for m in sys.modules if m == "benchmarks" or m.startswith("benchmarks.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.chdir(tmp_path)
    assert main(["bench", "--quick"]) == 1
    err = capsys.readouterr().err
    assert "runs benchmarks/bench_forward.py from the source repository" in err


def test_import_gridsample_imports_no_imaging_library():
    code = ("import sys, gridsample, gridsample.cli; "
            "print([m for m in ('PIL', 'tifffile', 'tqdm', 'nibabel') if m in sys.modules])")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.strip() == "[]", proc.stderr


def test_progress_bar_and_quiet(tmp_path, capsys):
    vol = random_array((16, 64, 64), np.float32, 13)  # 65,536 points per slab row group
    np.save(tmp_path / "vol.npy", vol)
    out = tmp_path / "out.npy"
    # 2**18 points per slab: a 32x64x256 output is two slabs.
    assert main(["warp", str(tmp_path / "vol.npy"), str(out), "--size", "256x64x32",
                 "--progress"]) == 0
    captured = capsys.readouterr()
    assert "slab" in captured.err and "vol.npy -> " in captured.out
    assert main(["warp", str(tmp_path / "vol.npy"), str(out), "--size", "256x64x32", "-q",
                 "--progress"]) == 0
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == ""
    want = affine_expected(vol, 3, np.eye(3, 4), (32, 64, 256))
    np.testing.assert_allclose(np.load(out), want, rtol=1e-6, atol=1e-6)


# --------------------------------------------------------------------------- pure functions

def test_slabs_equal_one_call():
    from gridsample.cli._transforms import AffineSource
    from gridsample.cli._warp import warp_array

    x = random_array((7, 9, 11, 2), np.float32, 14)
    theta = np.array([[0.9, 0.1, 0.0, 0.05], [-0.1, 1.1, 0.2, 0.0], [0.0, 0.1, 0.8, -0.1]])
    source = AffineSource(theta, (5, 9, 13), False)
    whole = warp_array(x, 3, source, "linear", "border", False)
    slabs = warp_array(x, 3, source, "linear", "border", False, slab_points=100)
    assert np.array_equal(whole, slabs)
    assert np.array_equal(whole, affine_expected(x, 3, theta, (5, 9, 13), padding="border"))


@pytest.mark.parametrize("padding", ["border", "wrap"])
def test_bspline_slabs_equal_one_call(padding):
    """A B-spline prefilters the volume once for all slabs: the same as one call."""
    from gridsample.cli._transforms import AffineSource
    from gridsample.cli._warp import warp_array

    x = random_array((7, 9, 11, 2), np.float32, 15)
    theta = np.array([[0.9, 0.1, 0.0, 0.05], [-0.1, 1.1, 0.2, 0.0], [0.0, 0.1, 0.8, -0.1]])
    source = AffineSource(theta, (5, 9, 13), False)
    slabs = warp_array(x, 3, source, "bspline3", padding, False, slab_points=100)
    grid = source.rows(0, 5, np.float32)
    whole = gridsample.grid_sample(x[None], grid, "bspline3", padding, channel_last=True)[0]
    np.testing.assert_array_equal(slabs, whole)


@pytest.mark.parametrize("align", [False, True])
def test_affine_rows_equal_affine_grid_bit_for_bit(align):
    from gridsample.cli._transforms import AffineSource

    rng = np.random.default_rng(15)
    for spatial in [(17, 23), (1, 5), (5, 9, 11), (3, 1, 4)]:
        r = len(spatial)
        theta = rng.standard_normal((r, r + 1))
        source = AffineSource(theta, spatial, align)
        ref = gridsample.affine_grid(theta[None], (1, 1, *spatial), align)
        rows = [source.rows(i, min(i + 2, spatial[0]), np.float64)
                for i in range(0, spatial[0], 2)]
        assert np.array_equal(np.concatenate(rows, 1), ref)


def test_png16_codec_every_filter():
    import io

    from gridsample.cli._png16 import encode_png16, read_png16

    a = random_array((13, 17, 3), np.uint16, 16)
    a[5:] = a[:8] // 3  # some structure for the predictors
    for filter_type in range(5):
        data = encode_png16(a, filter_type)
        assert np.array_equal(read_png16(data), a)
        with Image.open(io.BytesIO(data)) as im:  # pillow's own decoder, reduced to 8 bits
            assert np.array_equal(np.asarray(im), (a >> 8).astype(np.uint8))
    cv2 = pytest.importorskip("cv2")
    ok, buf = cv2.imencode(".png", a[..., ::-1])  # libpng, adaptive filters
    assert ok and np.array_equal(read_png16(buf.tobytes()), a)


def test_read_palette_bilevel_and_big_endian(tmp_path):
    from gridsample.cli._io import read_raster

    rgb = random_array((6, 7, 3), np.uint8, 17)
    Image.fromarray(rgb).convert("P").save(tmp_path / "p.png")
    with Image.open(tmp_path / "p.png") as im:
        want = np.asarray(im.convert("RGB"))
    got = read_raster(tmp_path / "p.png").array
    assert got.shape == (6, 7, 3) and np.array_equal(got, want)
    Image.fromarray(rgb[..., 0] > 127).save(tmp_path / "b.png")  # mode "1"
    got = read_raster(tmp_path / "b.png").array
    assert got.dtype == np.uint8 and set(np.unique(got)) <= {0, 255}
    vol = random_array((3, 4, 5), np.float32, 18)
    np.save(tmp_path / "be.npy", vol.astype(">f4"))
    raster = read_raster(tmp_path / "be.npy")
    assert raster.array.dtype.isnative and np.array_equal(raster.array, vol)
    assert raster.spatial_dims == 3 and raster.channels is None


def test_chart_and_sheet_layout():
    from gridsample.cli._demo import sheet_size, test_chart

    chart = test_chart(100)
    assert chart.shape == (100, 100, 3) and chart.dtype == np.uint8
    assert len(np.unique(chart.reshape(-1, 3), axis=0)) > 100  # zone plate greys + colours
    assert sheet_size(256) == (8 + 3 * (256 + 4 + 256 + 8), 8 + 4 * (16 + 256 + 8))


# --------------------------------------------------------------------------- errors

@pytest.fixture
def files(tmp_path):
    """Inputs for the error cases, in ``tmp_path / "in"``; outputs go to ``tmp_path / "out"``."""
    src, out = tmp_path / "in", tmp_path / "out"
    src.mkdir()
    out.mkdir()
    Image.fromarray(random_array((8, 10, 3), np.uint8)).save(src / "rgb.png")
    np.save(src / "vol.npy", random_array((4, 5, 6), np.float32))
    np.save(src / "five.npy", np.zeros((1, 2, 3, 4, 5), np.float32))
    np.save(src / "strings.npy", np.array([["a", "b"], ["c", "d"]]))
    np.savez(src / "two.npz", a=np.zeros((3, 3)), b=np.ones((3, 3)))
    (src / "garbage.png").write_bytes(b"\x89PNG\r\n\x1a\n this is not a PNG")
    (src / "garbage.npy").write_bytes(b"not numpy")
    np.save(src / "theta34.npy", np.eye(3, 4))
    (src / "empty.txt").write_text("\n")
    np.save(src / "proj.npy", np.array([[1, 0, 0], [0, 1, 0], [0.1, 0, 1]]))
    np.save(src / "flow3.npy", np.zeros((8, 10, 3), np.float32))
    np.save(src / "hw3.npy", random_array((8, 10, 3), np.float32))
    Image.fromarray(random_array((8, 10), np.uint16)).save(src / "deep.png")
    (src / "empty.npy").write_bytes(b"")
    (src / "huge.txt").write_text("1e300 0 0\n0 1e300 0\n")
    return src, out


ERRORS = [
    # (arguments with {in}/{out} placeholders, exit code, part of the message)
    (["warp", "{in}/rgb.png", "{out}/o.png", "--bogus"], 2, "unrecognized arguments: --bogus"),
    (["warp", "{in}/rgb.png", "{out}/o.png", "--mode", "spline"], 2, "invalid choice: 'spline'"),
    (["warp", "{in}/rgb.png", "{out}/o.bmp"], 2, "unknown file type '.bmp'"),
    (["warp", "{in}/rgb.png", "{out}/o.png", "--size", "12"], 2, "is not a size"),
    (["warp", "{in}/rgb.png", "{out}/o.png", "--rotate", "3", "--matrix", "{in}/theta34.npy"], 2,
     "--rotate and --matrix cannot be combined"),
    (["warp", "{in}/rgb.png", "{out}/o.png", "--matrix-units", "pixels"], 2,
     "--matrix-units needs --matrix FILE"),
    (["warp", "{in}/rgb.png", "{out}/o.png", "--flow-type", "absolute", "--flow-units",
      "pixels"], 2, "--flow-type and --flow-units need --flow FILE"),
    (["warp", "{in}/missing.png", "{out}/o.png"], 1, "cannot read {in}/missing.png: no such file"),
    (["warp", "{in}/garbage.png", "{out}/o.png"], 1, "cannot read {in}/garbage.png as PNG"),
    (["warp", "{in}/garbage.npy", "{out}/o.npy"], 1, "cannot read {in}/garbage.npy as .npy"),
    (["warp", "{in}/five.npy", "{out}/o.npy"], 1, "the array has shape (1, 2, 3, 4, 5)"),
    (["warp", "{in}/two.npz", "{out}/o.npz"], 1, "holds 2 arrays (a, b); choose one with --key"),
    (["warp", "{in}/rgb.png", "{out}/nodir/o.png"], 1, "the directory {out}/nodir does not exist"),
    (["warp", "{in}/vol.npy", "{out}/o.png"], 1, "PNG holds 2-D images"),
    (["warp", "{in}/rgb.png", "{out}/o.npy", "--size", "4x4x4"], 1, "has 3 values"),
    (["warp", "{in}/rgb.png", "{out}/o.png", "--rotate-x", "5"], 1,
     "--rotate-x applies to volumes"),
    (["warp", "{in}/rgb.png", "{out}/o.png", "--matrix", "{in}/theta34.npy"], 1,
     "the matrix has shape (3, 4); a 2-D image needs 2x3 or 3x3"),
    (["warp", "{in}/rgb.png", "{out}/o.png", "--matrix", "{in}/proj.npy"], 1, "last row"),
    (["warp", "{in}/rgb.png", "{out}/o.png", "--matrix", "{in}/empty.txt"], 1,
     "holds a float64 array of shape (0, 0)"),
    (["warp", "{in}/rgb.png", "{out}/o.png", "--flow", "{in}/flow3.npy"], 1, "the flow field"),
    (["warp", "{in}/rgb.png", "{out}/o.png", "--flow", "{in}/nothere.npy"], 1,
     "cannot read the flow field"),
    (["warp", "{in}/rgb.png", "{in}/rgb.png"], 1, "is the input itself; pass --force"),
    (["warp", "{in}/*.tif", "{out}"], 1, "no file matches"),
    (["warp", "{in}/rgb.png", "{in}/vol.npy", "{out}/o.npy"], 1,
     "need OUTPUT to be a directory (an existing one, or a path ending in '/'"),
    # Options that give no transform are refused, never a traceback or a black image.
    (["warp", "{in}/rgb.png", "{out}/o.png", "--rotate", "inf"], 2,
     "--rotate inf: the value must be a finite number"),
    (["warp", "{in}/rgb.png", "{out}/o.png", "--rotate", "nan"], 2, "--rotate nan: the value"),
    (["warp", "{in}/vol.npy", "{out}/o.npy", "--rotate-x", "inf"], 2, "--rotate-x inf: the"),
    (["warp", "{in}/rgb.png", "{out}/o.png", "--scale", "nan"], 2, "--scale nan: the value"),
    (["warp", "{in}/rgb.png", "{out}/o.png", "--scale", "inf"], 2, "--scale inf: the value"),
    (["warp", "{in}/rgb.png", "{out}/o.png", "--scale-y", "0"], 2, "--scale-y 0: a scale of 0"),
    (["warp", "{in}/rgb.png", "{out}/o.png", "--translate", "inf", "0"], 2,
     "--translate inf 0: the value must be a finite number"),
    (["warp", "{in}/rgb.png", "{out}/o.png", "--shear-x", "90"], 2,
     "--shear-x 90: a shear of ±90 degrees"),
    (["warp", "{in}/rgb.png", "{out}/o.png", "--shear-x", "89.9999999999"], 2,
     "--shear-x 89.9999999999: a shear of ±90 degrees (or so near it"),
    (["warp", "{in}/rgb.png", "{out}/o.png", "--shear-x", "45", "--shear-y", "45"], 2,
     "the affine transform is singular or degenerate"),
    (["warp", "{in}", "{out}/o.png"], 1, "cannot read {in}: it is a directory"),
    (["warp", "{in}/rgb.png", "{in}/rgb.png/o.png"], 1,
     "cannot write {in}/rgb.png/o.png: {in}/rgb.png is a file, not a directory"),
    (["warp", "{in}/rgb.png", "{out}/o.png", "--invert-matrix"], 2,
     "--invert-matrix needs --matrix FILE"),
    (["warp", "{in}/rgb.png", "{out}/o.png", "--key", "a"], 2,
     "--key applies to .npy and .npz inputs"),
    (["warp", "{in}/rgb.png", "{out}/o.png", "--spatial-dims", "3"], 2,
     "--spatial-dims applies to .npy and .npz inputs"),
    (["warp", "{in}/hw3.npy", "{out}/o.png"], 1, "pass --spatial-dims 2"),
    # Every input is checked against the output format before anything is written.
    (["warp", "{in}/rgb.png", "{in}/deep.png", "{out}/", "--ext", ".jpg"], 1,
     "cannot write a uint16 image to {out}/deep.jpg"),
    (["warp", "{in}/rgb.png", "{in}/deep.png", "{out}/new/", "--ext", ".jpg"], 1,
     "cannot write a uint16 image"),
    # Strings are sampled with nearest only (the message speaks of the command's option).
    (["warp", "{in}/strings.npy", "{out}/o.npy"], 1,
     "{in}/strings.npy: strings are sampled with --mode nearest only, not --mode linear"),
    (["demo", "--output", "{out}/sheet.jpg"], 2, "the demo writes a PNG"),
    # An empty or non-.npy file, sizes beyond any array, a matrix beyond any grid, an
    # operator's refusal among several inputs (before anything is written).
    (["warp", "{in}/rgb.png", "{out}/o.png", "--flow", "{in}/empty.npy"], 1,
     "cannot read the flow field {in}/empty.npy: the file is empty or cut short"),
    (["warp", "{in}/rgb.png", "{out}/o.png", "--matrix", "{in}/empty.npy"], 1,
     "cannot read the matrix file {in}/empty.npy: the file is empty or cut short"),
    (["warp", "{in}/garbage.npy", "{out}/o.npy"], 1, "it is not a .npy/.npz array file"),
    (["warp", "{in}/rgb.png", "{out}/o.png", "--size", "99999999999999999999x1"], 2,
     "is not a size"),
    # (a value argparse would take for an option: the size's own message instead)
    (["warp", "{in}/rgb.png", "{out}/o.png", "--size", "-5x10"], 2,
     "argument --size: '-5x10' is not a size"),
    (["warp", "{in}/rgb.png", "{out}/o.png", "--size", "1152921504606846976x1"], 1,
     "--size 1152921504606846976x1 asks for an output that would hold"),
    (["warp", "{in}/vol.npy", "{out}/o.npy", "--size", "2097152x2097152x2097152"], 1,
     "more than this machine can address"),
    (["demo", "--size", "99999999999999999999", "-q", "--output", "{out}/d.png"], 2,
     "is too large"),
    (["warp", "{in}/vol.npy", "{out}/o.npy", "--key", "a"], 2,
     "--key applies to .npz inputs; {in}/vol.npy is a .npy file"),
    (["warp", "{in}/rgb.png", "{out}/o.png", "--matrix", "{in}/huge.txt"], 1,
     "the transform maps the output beyond what a grid holds"),
    (["warp", "{in}/rgb.png", "{in}/strings.npy", "{out}/"], 1,
     "{in}/strings.npy: strings are sampled with --mode nearest only"),
    (["warp", "{in}/rgb.png", "{in}/deep.png", "{out}/", "--ext", "bmp"], 2,
     "--ext 'bmp' is not a file type gridsample writes"),
]


@pytest.mark.parametrize("argv, code, message", ERRORS, ids=[e[2][:40] for e in ERRORS])
def test_error_paths(files, capsys, argv, code, message):
    src, out = files
    before = sorted(p.name for p in src.iterdir())
    def fill(s):
        return s.replace("{in}", str(src)).replace("{out}", str(out))

    assert main([fill(a) for a in argv]) == code
    err = capsys.readouterr().err
    assert err.startswith("gridsample: error: ") and fill(message) in err, err
    assert "Traceback" not in err
    assert_no_leftovers(out)
    assert sorted(p.name for p in src.iterdir()) == before


def test_far_translation_and_far_flow_are_taken(files, capsys):
    """A translation collapses nothing however far it goes (the output reads only outside,
    zeros), and a flow beyond float32's range is a point infinitely far out, without an
    overflow warning."""
    src, out = files
    np.save(src / "far_flow.npy", np.full((8, 10, 2), 1e300))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert main(["warp", str(src / "rgb.png"), str(out / "t.png"), "--translate", "1000000",
                     "0", "-q"]) == 0
        assert main(["warp", str(src / "hw3.npy"), str(out / "f.npy"), "--spatial-dims", "2",
                     "--flow", str(src / "far_flow.npy"), "-q"]) == 0
    assert not np.asarray(Image.open(out / "t.png")).any()
    assert not np.load(out / "f.npy").any()


@pytest.mark.parametrize("stated", [float("inf"), float("nan"), 0.0, -2.0, 1e308])
def test_pixel_sizes_no_one_measured_state_nothing(tmp_path, capsys, stated):
    """An OME-TIFF's PhysicalSizeX that is not a length (inf, NaN, 0, negative, absurd):
    the warp runs as for a file that states no sizes, without warnings."""
    a = smooth_image((12, 16), np.uint16)
    tifffile.imwrite(tmp_path / "plain.ome.tif", a, metadata={"axes": "YX"})
    tifffile.imwrite(tmp_path / "odd.ome.tif", a,
                     metadata={"axes": "YX", "PhysicalSizeX": stated, "PhysicalSizeY": stated})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for name in ("plain", "odd"):
            assert main(["warp", str(tmp_path / f"{name}.ome.tif"),
                         str(tmp_path / f"{name}.npy"), "--rotate", "10", "-q"]) == 0
    np.testing.assert_array_equal(np.load(tmp_path / "odd.npy"), np.load(tmp_path / "plain.npy"))


def _nifti_with_sform(path, sform, fill=0.0):
    """A 4x5x6 NIfTI volume whose header states ``sform`` (written into the header's rows:
    nibabel will not build an image of a singular affine)."""
    nib = pytest.importorskip("nibabel")
    header = nib.Nifti1Image(np.zeros((4, 5, 6), np.float32), np.eye(4)).header
    for k, row in zip(("srow_x", "srow_y", "srow_z"), sform[:3]):
        header[k] = row
    header["sform_code"] = 1
    nib.save(nib.Nifti1Image(np.full((4, 5, 6), fill, np.float32), None, header), path)


@pytest.mark.parametrize("sform", [np.zeros((4, 4)), np.diag([np.inf, 1.0, 1.0, 1.0])])
@pytest.mark.parametrize("transform", [["--rotate", "5"], ["--matrix", "{eye}"]])
def test_singular_or_infinite_nifti_affine_is_refused_in_one_line(tmp_path, capsys, sform,
                                                                  transform):
    """An input's affine that maps no voxel to the world (singular, infinite) is refused when
    the input is read, in one line without warnings: a world-space warp cannot use it, and
    nibabel cannot write it back (its message spans lines)."""
    _nifti_with_sform(tmp_path / "bad.nii.gz", sform)
    np.savetxt(tmp_path / "eye.txt", np.eye(4))
    argv = [a.replace("{eye}", str(tmp_path / "eye.txt")) for a in transform]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert main(["warp", str(tmp_path / "bad.nii.gz"), str(tmp_path / "o.nii.gz"),
                     *argv]) == 1
    err = capsys.readouterr().err
    assert err.startswith("gridsample: error: the input") and "not finite or is singular" in err
    assert err.count("\n") == 1
    assert not (tmp_path / "o.nii.gz").exists()


def test_output_folder_that_cannot_be_made_is_one_line(files, capsys, monkeypatch):
    """OUTPUT ``folder/`` that the system refuses to make (a read-only parent: refused here
    by hand, since the tests may run as root): one line, before the input is sampled."""
    src, out = files

    def refuse(self, *args, **kwargs):
        raise PermissionError(13, "Permission denied", str(self))

    sampled = []
    monkeypatch.setattr(Path, "mkdir", refuse)
    monkeypatch.setattr(gridsample.cli._warp, "warp_array",
                        lambda *args, **kwargs: sampled.append(1))
    assert main(["warp", str(src / "rgb.png"), str(out / "ro" / "sub") + os.sep, "-q"]) == 1
    err = capsys.readouterr().err
    dst = out / "ro" / "sub" / "rgb.png"
    assert err == f"gridsample: error: cannot make the folder of {dst}: Permission denied\n"
    assert not sampled


def test_singular_like_reference_is_refused_before_the_warp(tmp_path, capsys):
    for name, sform in (("ok", np.eye(4)), ("zero", np.zeros((4, 4)))):
        _nifti_with_sform(tmp_path / f"{name}.nii.gz", sform, fill=1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert main(["warp", str(tmp_path / "ok.nii.gz"), str(tmp_path / "o.nii.gz"), "--like",
                     str(tmp_path / "zero.nii.gz")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("gridsample: error: the --like reference") and "singular" in err
    assert not (tmp_path / "o.nii.gz").exists()


def test_empty_tiff_is_written_without_a_warning(tmp_path):
    np.save(tmp_path / "empty.npy", np.zeros((0, 5), np.float32))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert main(["warp", str(tmp_path / "empty.npy"), str(tmp_path / "o.tif"), "-q"]) == 0
    assert tifffile.imread(tmp_path / "o.tif").size == 0


def test_empty_matrix_file_warns_nothing(files, capsys):
    """NumPy's loadtxt warns about an empty file (on stderr, before our message): not read."""
    src, out = files
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert main(["warp", str(src / "rgb.png"), str(out / "o.png"), "--matrix",
                     str(src / "empty.txt")]) == 1
    assert capsys.readouterr().err.startswith("gridsample: error: the matrix file")


@pytest.mark.parametrize("argv, code, message", [
    (["warp", "{in}/rgb.png", "{out}/o.png", "--bogus"], 2, "unrecognized arguments: --bogus"),
    (["warp", "{in}/missing.png", "{out}/o.png"], 1, "no such file"),
    (["warp", "{in}/garbage.png", "{out}/o.png"], 1, "cannot read"),
])
def test_error_exit_codes_in_a_process(files, argv, code, message):
    src, out = files
    proc = run(*[a.replace("{in}", str(src)).replace("{out}", str(out)) for a in argv])
    assert proc.returncode == code
    assert proc.stderr.startswith("gridsample: error: ") and message in proc.stderr
    assert "Traceback" not in proc.stderr
    assert_no_leftovers(out)


@pytest.mark.parametrize("module, extra", [("PIL", "cli"), ("nibabel", "nifti")])
def test_missing_optional_library_names_the_extra(files, capsys, monkeypatch, module, extra):
    src, out = files
    for name in [m for m in sys.modules if m == module or m.startswith(module + ".")] + [module]:
        monkeypatch.setitem(sys.modules, name, None)  # import raises ImportError
    target = "o.png" if module == "PIL" else "o.nii.gz"
    assert main(["warp", str(src / "vol.npy" if module == "nibabel" else src / "rgb.png"),
                 str(out / target)]) == 1
    err = capsys.readouterr().err
    assert f'pip install "gridsample[{extra}]"' in err
    assert_no_leftovers(out)


def test_failed_write_leaves_no_partial_file_and_keeps_the_old_one(files, capsys, monkeypatch):
    from gridsample.cli import _io

    src, out = files
    (out / "o.npy").write_bytes(b"old")

    def broken(tmp, raster, fmt):
        Path(tmp).write_bytes(b"partial")
        raise OSError("disk full")

    monkeypatch.setattr(_io, "_write_numpy", broken)
    assert main(["warp", str(src / "vol.npy"), str(out / "o.npy")]) == 1
    err = capsys.readouterr().err
    assert f"cannot write {out / 'o.npy'}: disk full" in err
    assert (out / "o.npy").read_bytes() == b"old"
    assert_no_leftovers(out, ["o.npy"])


def test_output_folder_given_with_a_slash_is_created(files, capsys):
    """README: ``gridsample warp a.png b.png out/`` creates out/ (the slash says it is a folder)."""
    src, out = files
    target = out / "new" / "deeper"
    assert main(["warp", str(src / "rgb.png"), str(src / "deep.png"), str(target) + "/",
                 "--rotate", "10"]) == 0
    assert sorted(p.name for p in target.iterdir()) == ["deep.png", "rgb.png"]
    text = capsys.readouterr().out
    assert "10x8 (WxH) RGB uint8 image" in text  # sizes as --size writes them: W x H


def test_readme_command_line_examples_run_as_written(tmp_path, capsys, monkeypatch):
    """Every ``gridsample warp`` line of the README's Command line block, on made-up inputs."""
    import re
    import shlex

    nib = pytest.importorskip("nibabel")
    readme = (REPO / "README.md").read_text()
    block = readme.split("## Command line", 1)[1].split("```bash", 1)[1].split("```", 1)[0]
    lines = [line.split("#", 1)[0].strip() for line in block.splitlines()
             if line.startswith("gridsample warp")]
    assert len(lines) >= 7
    monkeypatch.chdir(tmp_path)
    img = smooth_image((24, 32, 3))
    Image.fromarray(img).save("photo.png")
    Image.fromarray(img).save("photo.jpg", quality=95)
    Image.fromarray(img).save("in.png")
    Image.fromarray(img).save("frame.png")
    (tmp_path / "raw").mkdir()
    for name in ("a.png", "b.png"):
        Image.fromarray(img).save(tmp_path / "raw" / name)
    vol = random_array((6, 7, 8), np.float32)
    nib.save(nib.Nifti1Image(vol, np.diag([1.5, 1.0, 2.0, 1.0])), "scan.nii.gz")
    tifffile.imwrite("stack.tif", vol)
    np.save("theta.npy", np.array([[0.9, 0.1, 0, 0], [-0.1, 0.9, 0, 0], [0, 0, 1, 0.1]]))
    np.savetxt("m.txt", [[1, 0.1, 2], [0, 1, -1], [0, 0, 1]])
    np.save("flow.npy", np.full((24, 32, 2), 0.5, np.float32))
    for line in lines:
        argv = shlex.split(line)[1:]
        assert main(argv) == 0, (line, capsys.readouterr().err)
        written = argv[2] if not argv[1].startswith("raw") else "out"
        assert (tmp_path / re.sub(r"/$", "", written)).exists(), line
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["a.tif", "b.tif"]
