"""``gridsample warp`` on NIfTI volumes in physical space, against an independent path.

The oracle composes the same geometry without gridsample's code: nibabel's
``apply_affine`` for voxel <-> world, SciPy's ``Rotation`` for the turn about
the world axes, and ``scipy.ndimage.map_coordinates(order=1,
mode="grid-constant")`` for the sampling (linear interpolation with zeros
outside, voxel centres at integer indices: gridsample's linear / zeros /
align_corners=False).  Volumes are float32 with anisotropic voxels and
oblique (rotated) affines; tolerances are float32 rounding of coordinates
(about 1e-6 voxels times a gradient of at most ~1 per voxel): 1e-4.
"""

from __future__ import annotations

import numpy as np
import pytest

from gridsample.cli import main

nib = pytest.importorskip("nibabel")
ndimage = pytest.importorskip("scipy.ndimage")
from nibabel.affines import apply_affine  # noqa: E402
from scipy.spatial.transform import Rotation  # noqa: E402

SHAPE = (12, 14, 10)  # voxel axes i, j, k (read as D, H, W)


def oblique_affine(zooms, angles_deg, origin):
    """``A = [R diag(zooms) | origin]``: rotated axes, anisotropic voxels."""
    a = np.eye(4)
    a[:3, :3] = Rotation.from_euler("xyz", angles_deg, degrees=True).as_matrix() @ np.diag(zooms)
    a[:3, 3] = origin
    return a


def smooth_volume(shape, seed=0):
    rng = np.random.default_rng(seed)
    i, j, k = np.meshgrid(*(np.arange(n, dtype=np.float64) for n in shape), indexing="ij")
    f = rng.uniform(0.2, 0.5, 3)
    return (np.sin(f[0] * i + 0.3) * np.cos(f[1] * j) + 0.5 * np.sin(f[2] * k + f[0] * j)
            ).astype(np.float32)


def save(path, data, affine, sform_code=1, qform_code=1):
    img = nib.Nifti1Image(data, affine)
    img.set_sform(affine, code=sform_code)
    img.set_qform(affine, code=qform_code)
    nib.save(img, str(path))


def expected(data, a_in, out_shape, a_out, rotation=None, translation=(0, 0, 0)):
    """The oracle: output voxel -> world -> undo the content's move -> input voxel -> sample."""
    vox = np.stack(np.meshgrid(*(np.arange(n) for n in out_shape), indexing="ij"), -1)
    world = apply_affine(a_out, vox.reshape(-1, 3))
    centre = apply_affine(a_in, [(n - 1) / 2 for n in data.shape])
    rot = rotation if rotation is not None else Rotation.identity()
    world_in = centre + rot.inv().apply(world - centre - np.asarray(translation))
    v_in = apply_affine(np.linalg.inv(a_in), world_in)
    values = ndimage.map_coordinates(data.astype(np.float64), v_in.T, order=1,
                                     mode="grid-constant", cval=0.0)
    return values.reshape(out_shape)


@pytest.fixture
def scan(tmp_path):
    a_in = oblique_affine((2.0, 1.5, 1.0), (8, -5, 20), (-30.0, 12.0, 4.0))
    data = smooth_volume(SHAPE)
    save(tmp_path / "scan.nii.gz", data, a_in, sform_code=1, qform_code=4)
    return tmp_path, data, a_in


@pytest.mark.parametrize("options, rotation", [
    (["--rotate-z", "10"], Rotation.from_euler("z", 10, degrees=True)),
    (["--rotate-x", "-7", "--rotate-y", "12"],
     Rotation.from_euler("y", 12, degrees=True) * Rotation.from_euler("x", -7, degrees=True)),
])
def test_rotations_turn_about_the_world_axes_in_millimetres(scan, options, rotation):
    tmp, data, a_in = scan
    out = tmp / "out.nii.gz"
    argv = ["warp", str(tmp / "scan.nii.gz"), str(out), "-q", *options,
            "--translate", "3", "-2", "--translate-z", "1.5"]
    assert main(argv) == 0
    img = nib.load(str(out))
    got = np.asarray(img.dataobj)
    assert got.dtype == np.float32 and got.shape == SHAPE
    np.testing.assert_allclose(img.affine, a_in, atol=1e-6)  # the grid did not change
    assert (int(img.header["sform_code"]), int(img.header["qform_code"])) == (1, 4)
    want = expected(data, a_in, SHAPE, a_in, rotation, (3, -2, 1.5))
    np.testing.assert_allclose(got, want, atol=1e-4)


def test_size_keeps_the_field_of_view_and_updates_the_zooms(scan):
    tmp, data, a_in = scan
    out = tmp / "out.nii.gz"
    assert main(["warp", str(tmp / "scan.nii.gz"), str(out), "-q", "--size", "20x21x8"]) == 0
    img = nib.load(str(out))
    assert img.shape == (8, 21, 20)  # --size is W x H x D: k, j, i
    zooms_in = np.array([2.0, 1.5, 1.0])
    np.testing.assert_allclose(img.header.get_zooms(), zooms_in * np.array(SHAPE) / (8, 21, 20),
                               rtol=1e-6)
    # the volume's outer corners stay where they were in the world
    corners_in = apply_affine(a_in, [[-0.5] * 3, [n - 0.5 for n in SHAPE]])
    corners_out = apply_affine(img.affine, [[-0.5] * 3, [n - 0.5 for n in img.shape]])
    np.testing.assert_allclose(corners_out, corners_in, atol=1e-5)
    np.testing.assert_allclose(np.asarray(img.dataobj),
                               expected(data, a_in, img.shape, img.affine), atol=1e-4)


def test_like_resamples_onto_the_reference_grid(scan):
    tmp, data, a_in = scan
    a_ref = oblique_affine((1.2, 1.2, 1.8), (-10, 4, 35), (-25.0, 8.0, 0.0))
    save(tmp / "ref.nii.gz", np.zeros((16, 11, 9), np.int16), a_ref)
    out = tmp / "out.nii.gz"
    assert main(["warp", str(tmp / "scan.nii.gz"), str(out), "-q",
                 "--like", str(tmp / "ref.nii.gz"), "--rotate-z", "5"]) == 0
    img = nib.load(str(out))
    assert img.shape == (16, 11, 9)
    np.testing.assert_allclose(img.affine, a_ref, atol=1e-6)
    want = expected(data, a_in, (16, 11, 9), a_ref, Rotation.from_euler("z", 5, degrees=True))
    np.testing.assert_allclose(np.asarray(img.dataobj), want, atol=1e-4)


def test_the_written_affine_resamples_back_onto_the_input(scan):
    """Round trip: resampling the output onto the input's grid (--like) gives the input back
    within interpolation error, which only a correct output affine allows."""
    tmp, data, a_in = scan
    assert main(["warp", str(tmp / "scan.nii.gz"), str(tmp / "big.nii.gz"), "-q",
                 "--size", "30x42x36"]) == 0
    assert main(["warp", str(tmp / "big.nii.gz"), str(tmp / "back.nii.gz"), "-q",
                 "--like", str(tmp / "scan.nii.gz")]) == 0
    back = np.asarray(nib.load(str(tmp / "back.nii.gz")).dataobj)
    inner = (slice(2, -2),) * 3  # away from the zero padding at the faces
    # two linear resamplings of a smooth field (its second differences are below 0.05)
    assert np.abs(back[inner] - data[inner]).max() < 0.05


@pytest.mark.parametrize("argv, message", [
    (["warp", "{in}/scan.nii.gz", "{out}/o.nii.gz", "--like", "{in}/ref.nii.gz", "--size",
      "4x4x4"], "--like and --size cannot be combined"),
    (["warp", "{in}/flat.npy", "{out}/o.npy", "--like", "{in}/ref.nii.gz"],
     "--like resamples NIfTI volumes"),
    (["warp", "{in}/scan.nii.gz", "{out}/o.nii.gz", "--like", "{in}/missing.nii.gz"],
     "cannot read the --like reference"),
])
def test_like_errors(scan, capsys, argv, message):
    tmp, data, a_in = scan
    np.save(tmp / "flat.npy", data)
    save(tmp / "ref.nii.gz", np.zeros((4, 4, 4), np.int16), np.eye(4))
    (tmp / "o").mkdir()
    code = main([a.replace("{in}", str(tmp)).replace("{out}", str(tmp / "o")) for a in argv])
    assert code in (1, 2)
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not any((tmp / "o").iterdir())


# --- TIFF and OME-TIFF with physical pixel sizes ------------------------------------------

tifffile = pytest.importorskip("tifffile")


def expected_pixels(data, sizes, rotation_2x2_about, angle_deg, translation):
    """Oracle for a TIFF with pixel sizes ``sizes`` (µm, x first): pixel centres at
    ``s (p + 1/2)``, the content turned by the image convention (x' = x cos a + y sin a,
    y' = -x sin a + y cos a on the axes ``rotation_2x2_about``) about the centre, moved by
    ``translation`` µm; sampled by ``map_coordinates`` (linear, zeros)."""
    r = len(sizes)
    shape = data.shape[:r]
    grids = np.meshgrid(*(np.arange(n) for n in shape), indexing="ij")
    p = np.stack(grids[::-1], -1).reshape(-1, r).astype(np.float64)  # x first
    s = np.asarray(sizes)
    w = s * (p + 0.5)
    c = s * np.array(shape[::-1]) / 2
    a = np.radians(angle_deg)
    rot = np.eye(r)
    u, v = rotation_2x2_about
    rot[u, u], rot[u, v], rot[v, u], rot[v, v] = np.cos(a), np.sin(a), -np.sin(a), np.cos(a)
    w_in = c + (w - c - np.asarray(translation)) @ np.linalg.inv(rot).T
    p_in = w_in / s - 0.5
    coords = p_in[:, ::-1].T  # array order for map_coordinates
    return ndimage.map_coordinates(data.astype(np.float64), coords, order=1,
                                   mode="grid-constant", cval=0.0).reshape(shape)


def test_tiff_resolution_tags_make_rotations_physical(tmp_path):
    data = smooth_volume((30, 40, 1))[..., 0]
    # 0.5 µm wide, 1.0 µm high pixels, stated in pixels per centimetre
    tifffile.imwrite(tmp_path / "img.tif", data, resolution=(1e4 / 0.5, 1e4 / 1.0),
                     resolutionunit="CENTIMETER")
    out = tmp_path / "out.tif"
    assert main(["warp", str(tmp_path / "img.tif"), str(out), "-q", "--rotate", "30",
                 "--translate", "3", "-2"]) == 0
    got = tifffile.imread(out)
    want = expected_pixels(data, (0.5, 1.0), (0, 1), 30, (3, -2))
    np.testing.assert_allclose(got, want, atol=1e-4)
    with tifffile.TiffFile(out) as tif:  # the pixel sizes travel to the output
        assert tif.pages[0].resolution == pytest.approx((2e4, 1e4))


def test_ome_tiff_volume_sizes_and_size_option(tmp_path):
    data = smooth_volume((8, 10, 12))
    tifffile.imwrite(tmp_path / "vol.ome.tif", data,
                     metadata={"axes": "ZYX", "PhysicalSizeX": 0.4, "PhysicalSizeY": 0.4,
                               "PhysicalSizeZ": 2.0})
    out = tmp_path / "out.tif"
    assert main(["warp", str(tmp_path / "vol.ome.tif"), str(out), "-q", "--rotate-x",
                 "20"]) == 0
    want = expected_pixels(data, (0.4, 0.4, 2.0), (1, 2), 20, (0, 0, 0))
    np.testing.assert_allclose(tifffile.imread(out), want, atol=1e-4)
    # --size: the same field of view, so the pixel sizes scale by n_in / n_out
    assert main(["warp", str(tmp_path / "vol.ome.tif"), str(tmp_path / "s.tif"), "-q",
                 "--size", "24x5x8"]) == 0
    with tifffile.TiffFile(tmp_path / "s.tif") as tif:
        assert tif.pages[0].resolution == pytest.approx((1e4 / 0.2, 1e4 / 0.8))


def test_imagej_units_and_files_that_state_nothing(tmp_path):
    from gridsample.cli._io import tiff_pixel_sizes

    tifffile.imwrite(tmp_path / "ij.tif", np.zeros((3, 5, 6), np.uint16), imagej=True,
                     resolution=(2.0, 4.0), metadata={"spacing": 3.0, "unit": "um",
                                                      "axes": "ZYX"})
    tifffile.imwrite(tmp_path / "plain.tif", np.zeros((5, 6), np.uint16))
    with tifffile.TiffFile(tmp_path / "ij.tif") as tif:
        assert tiff_pixel_sizes(tif) == pytest.approx((0.5, 0.25, 3.0))
    with tifffile.TiffFile(tmp_path / "plain.tif") as tif:
        assert tiff_pixel_sizes(tif) == (None, None, None)  # pixels are the units
