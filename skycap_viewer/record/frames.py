"""Decompress skycap files: exactly one zstd frame each.

skycap writes every file as one frame in one call. skycap's own reader silently keeps only
the first frame and silently returns a short payload for a truncated one; this module refuses
both, so a damaged file is reported instead of being shown half-read.
"""

import sys

if sys.version_info >= (3, 14):
    from compression import zstd
else:  # the official backport, same API
    from backports import zstd

ZstdError = zstd.ZstdError


class FrameError(ValueError):
    """The bytes are not exactly one complete zstd frame."""


def decompress_one_frame(data: bytes) -> bytes:
    """Return the payload of `data`, which must be exactly one complete zstd frame."""
    if not data:
        raise FrameError("empty file (0 bytes), not a zstd frame")
    decompressor = zstd.ZstdDecompressor()
    try:
        payload = decompressor.decompress(data)
    except ZstdError as error:
        raise FrameError(f"not a zstd frame ({error})") from None
    if not decompressor.eof:
        raise FrameError(f"truncated zstd frame ({len(data)} bytes end inside the frame)")
    extra = len(decompressor.unused_data)
    if extra:
        raise FrameError(f"{extra} bytes after the first zstd frame (a skycap file is exactly one frame)")
    return payload


def compress(payload: bytes, level: int = 3) -> bytes:
    """One zstd frame holding `payload`, as skycap writes it."""
    return zstd.compress(payload, level=level)
