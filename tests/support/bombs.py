"""Compression bombs built without compressing their whole output (issue 32, issue 44.4)."""

from __future__ import annotations

import struct
import zlib

_CRC_2_GIB_OF_ZEROS = 0x4DBDF21C


def gzip_bomb() -> bytes:
    """2 MiB of gzip that inflates to 2 GiB of zero bytes, built without compressing them:
    after a full flush a deflate stream starts afresh, so every further MiB compresses to
    the same bytes."""
    mib, n = bytes(2**20), 2048
    deflate = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    first = deflate.compress(mib) + deflate.flush(zlib.Z_FULL_FLUSH)
    again = deflate.compress(mib) + deflate.flush(zlib.Z_FULL_FLUSH)
    header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
    trailer = struct.pack("<II", _CRC_2_GIB_OF_ZEROS, (n * len(mib)) % 2**32)
    return header + first + again * (n - 1) + deflate.flush() + trailer


def stacked_gzip_bomb() -> bytes:
    """:func:`gzip_bomb` gzipped again, for ``Content-Encoding: gzip, gzip``: about 9 kB on
    the wire, 2 MiB after one layer, 2 GiB after two."""
    return zlib.compress(gzip_bomb(), 9, wbits=16 + zlib.MAX_WBITS)
