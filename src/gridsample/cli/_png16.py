"""16-bit colour PNG (grey + alpha, RGB, RGBA): the PNG files pillow cannot hold.

Pillow has no 16-bit multi-channel image mode: it reads such files as 8-bit
and cannot write them.  This module reads and writes them with ``zlib`` and
NumPy (and one small compiled loop), following the PNG specification
(ISO/IEC 15948):

* the file is the 8-byte signature, then chunks ``length | type | data | CRC-32``;
  ``IHDR`` gives width, height, bit depth, colour type and interlace method,
  the ``IDAT`` chunks together are one zlib stream;
* decompressed, each row is one filter-type byte followed by
  ``stride = width * channels * 2`` bytes of big-endian 16-bit samples;
* filters predict byte ``i`` of a row from ``a`` (the byte ``bpp`` back, in
  the same row: the same sample of the pixel to the left), ``b`` (the byte
  above) and ``c`` (the byte above ``a``), all modulo 256:
  0 None, 1 Sub ``+a``, 2 Up ``+b``, 3 Average ``+floor((a + b) / 2)``,
  4 Paeth ``+`` whichever of ``a, b, c`` is closest to ``a + b - c``
  (ties: a, then b, then c).  ``bpp = channels * 2`` bytes per pixel.

Interlaced (Adam7) 16-bit colour files are refused with a message; every
other PNG goes through pillow.
"""

from __future__ import annotations

import struct
import zlib

import numba
import numpy as np

__all__ = ["SIGNATURE", "png_header", "needs_png16", "read_png16", "encode_png16",
           "COLOUR_TYPES"]

SIGNATURE = b"\x89PNG\r\n\x1a\n"
#: PNG colour type of each channel count: grey, grey + alpha, RGB, RGBA.
COLOUR_TYPES = {1: 0, 2: 4, 3: 2, 4: 6}
_CHANNELS = {t: c for c, t in COLOUR_TYPES.items()}


def png_header(head: bytes):
    """``(width, height, bit_depth, colour_type, interlace)`` from a file's first 33 bytes.

    Returns None when ``head`` does not start with a PNG signature and IHDR chunk.
    """
    if len(head) < 33 or head[:8] != SIGNATURE or head[12:16] != b"IHDR":
        return None
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", head[16:29])
    return width, height, depth, colour, interlace


def needs_png16(head: bytes) -> bool:
    """Whether a PNG with this start is 16-bit with more than one channel."""
    info = png_header(head)
    return info is not None and info[2] == 16 and info[3] in (2, 4, 6)


def _chunks(data: bytes):
    pos = len(SIGNATURE)
    while pos + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if len(body) != length or pos + 12 + length > len(data):
            raise ValueError("truncated PNG chunk")
        (crc,) = struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])
        if zlib.crc32(kind + body) != crc:
            raise ValueError(f"bad CRC in PNG chunk {kind!r}")
        yield kind, body
        pos += 12 + length
        if kind == b"IEND":
            return
    raise ValueError("PNG ends without an IEND chunk")


@numba.njit(cache=True, nogil=True)
def _unfilter(data, height, stride, bpp, out):  # pragma: no cover - compiled
    """Undo the row filters of ``data`` into ``out`` (height, stride); 0, or -1 - row on error."""
    for y in range(height):
        base = y * (stride + 1)
        kind = data[base]
        if kind > 4:
            return -1 - y
        for i in range(stride):
            v = np.int32(data[base + 1 + i])
            a = np.int32(out[y, i - bpp]) if i >= bpp else np.int32(0)
            b = np.int32(out[y - 1, i]) if y > 0 else np.int32(0)
            if kind == 1:
                v += a
            elif kind == 2:
                v += b
            elif kind == 3:
                v += (a + b) >> 1
            elif kind == 4:
                c = np.int32(out[y - 1, i - bpp]) if (y > 0 and i >= bpp) else np.int32(0)
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                if pa <= pb and pa <= pc:
                    v += a
                elif pb <= pc:
                    v += b
                else:
                    v += c
            out[y, i] = np.uint8(v & 255)
    return 0


def read_png16(data: bytes) -> np.ndarray:
    """Decode a 16-bit grey + alpha / RGB / RGBA PNG.

    Parameters
    ----------
    data : bytes
        The whole file.

    Returns
    -------
    ndarray of uint16, shape (H, W, C), C = 2, 3 or 4

    Raises
    ------
    ValueError
        Not such a PNG, interlaced, truncated or corrupt.
    """
    info = png_header(data[:33])
    if info is None or not needs_png16(data[:33]):
        raise ValueError("not a 16-bit colour PNG")
    width, height, _, colour, interlace = info
    if interlace:
        raise ValueError("interlaced (Adam7) 16-bit colour PNGs are not supported; "
                         "save it without interlacing, or as TIFF")
    channels = _CHANNELS[colour]
    stride = width * channels * 2
    idat = b"".join(body for kind, body in _chunks(data) if kind == b"IDAT")
    raw = np.frombuffer(zlib.decompress(idat), np.uint8)
    if raw.size < height * (stride + 1):
        raise ValueError(f"PNG image data too short: {raw.size} bytes for {width}x{height}")
    out = np.empty((height, stride), np.uint8)
    status = _unfilter(raw, height, stride, channels * 2, out)
    if status != 0:
        raise ValueError(f"unknown PNG filter type in row {-1 - status}")
    return out.view(">u2").reshape(height, width, channels).astype(np.uint16)


def _filter_rows(rows: np.ndarray, bpp: int, kind: int) -> np.ndarray:
    """Apply one PNG filter to every row (uint8, shape (H, stride)); vectorized.

    Encoding predicts from the *raw* bytes, so every row is independent.
    """
    raw = rows.astype(np.int32)
    a = np.zeros_like(raw)
    a[:, bpp:] = raw[:, :-bpp]
    b = np.zeros_like(raw)
    b[1:] = raw[:-1]
    if kind == 0:
        pred = np.zeros_like(raw)
    elif kind == 1:
        pred = a
    elif kind == 2:
        pred = b
    elif kind == 3:
        pred = (a + b) >> 1
    else:
        c = np.zeros_like(raw)
        c[1:, bpp:] = raw[:-1, :-bpp]
        p = a + b - c
        pa, pb, pc = np.abs(p - a), np.abs(p - b), np.abs(p - c)
        pred = np.where((pa <= pb) & (pa <= pc), a, np.where(pb <= pc, b, c))
    return ((raw - pred) & 255).astype(np.uint8)


def _chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def encode_png16(array: np.ndarray, filter_type: int = 4, level: int = 6) -> bytes:
    """Encode a uint16 (H, W, C) array, C = 2, 3 or 4, as a PNG file.

    Parameters
    ----------
    array : ndarray of uint16, shape (H, W, C)
    filter_type : {0, 1, 2, 3, 4}, default 4 (Paeth)
        The filter used on every row.
    level : int, default 6
        zlib compression level.

    Returns
    -------
    bytes
    """
    height, width, channels = array.shape
    rows = np.ascontiguousarray(array, ">u2").view(np.uint8).reshape(height, width * channels * 2)
    filtered = _filter_rows(rows, channels * 2, filter_type)
    body = np.empty((height, filtered.shape[1] + 1), np.uint8)
    body[:, 0] = filter_type
    body[:, 1:] = filtered
    ihdr = struct.pack(">IIBBBBB", width, height, 16, COLOUR_TYPES[channels], 0, 0, 0)
    return (SIGNATURE + _chunk(b"IHDR", ihdr)
            + _chunk(b"IDAT", zlib.compress(body.tobytes(), level)) + _chunk(b"IEND", b""))
