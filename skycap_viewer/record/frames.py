"""Decompress skycap files: exactly one zstd frame each, never more than a ceiling.

skycap writes every file as one frame in one call. skycap's own reader silently keeps only
the first frame and silently returns a short payload for a truncated one; this module refuses
both, so a damaged file is reported instead of being shown half-read.

A few kilobytes of zstd can stand for gigabytes (a valid record followed by 2 GiB of
whitespace), so every decompression has a ceiling: the file limit (`--max-file-mib`) for a
document, and for a sidecar what its manifest's arrays need. The size a frame header
declares is checked before decompressing; a frame that does not declare one is cut off one
byte past the ceiling. Either way the file is named as a problem, never read whole.
"""

import sys

if sys.version_info >= (3, 14):
    from compression import zstd
else:  # the official backport, same API
    from backports import zstd

ZstdError = zstd.ZstdError
MIB = 2**20
DEFAULT_FILE_LIMIT = 128 * MIB  # 2x the largest documents seen in use (~55 MB); a 1 M-node chain is ~60-100 MiB
_file_limit = DEFAULT_FILE_LIMIT  # set once at start: by the command line, and by each indexing worker


class FrameError(ValueError):
    """The bytes are not exactly one complete zstd frame, or decompress past the ceiling."""


def file_limit() -> int:
    """The most bytes any one record file may decompress to."""
    return _file_limit


def set_file_limit(limit: int) -> None:
    global _file_limit
    _file_limit = limit


def mib(size: int) -> str:
    """A size in MiB for a message; whole MiB counted in integers, so a manifest's absurd shape
    (past a float's range) is still said, not an OverflowError."""
    return f"{(size + MIB // 2) // MIB} MiB" if size >= 10 * MIB else f"{size / MIB:.1f} MiB"


def stored_size_problem(stored: int, limit: int) -> str | None:
    """Refuse before reading a file too big to decompress within `limit`: zstd never grows its input
    by more than ~1/256 plus a block header, so a larger file can only hold a larger payload."""
    if stored > limit + limit // 128 + 65536:
        return f"is {mib(stored)} on disk: it decompresses past {mib(limit)}, the --max-file-mib limit"
    return None


def declared_size(data: bytes) -> int | None:
    """The payload size the frame header declares, or None (not declared, or no whole header)."""
    try:
        return zstd.get_frame_info(data).decompressed_size
    except ZstdError:  # a truncated or foreign header: decompressing says which
        return None


def decompress_one_frame(data: bytes, limit: int | None = None, what: str = "the file",
                         ceiling: str = "the --max-file-mib limit") -> bytes:
    """Return the payload of `data`, which must be exactly one complete zstd frame of at most `limit`
    bytes (the file limit by default); errors name the file as `what` and say what the limit is."""
    limit = _file_limit if limit is None else limit
    if not data:
        raise FrameError("empty file (0 bytes), not a zstd frame")
    declared = declared_size(data)
    if declared is not None and declared > limit:
        raise FrameError(f"{what} decompresses to {mib(declared)} (its frame header says), "
                         f"past {mib(limit)}, {ceiling}")
    decompressor = zstd.ZstdDecompressor()
    try:
        payload = decompressor.decompress(data, max_length=limit + 1)
    except ZstdError as error:
        raise FrameError(f"not a zstd frame ({error})") from None
    if len(payload) > limit:
        raise FrameError(f"{what} decompresses past {mib(limit)}, {ceiling}")
    if not decompressor.eof:
        raise FrameError(f"truncated zstd frame ({len(data)} bytes end inside the frame)")
    extra = len(decompressor.unused_data)
    if extra:
        raise FrameError(f"{extra} bytes after the first zstd frame (a skycap file is exactly one frame)")
    return payload


def decompress_prefix(data: bytes, length: int) -> bytes:
    """The first `length` bytes of the payload of the zstd frame `data` (all of it when shorter),
    decompressing no further: a few rows of a big sidecar cost what comes before them, not the file.
    Whether the whole file is one sound frame is the verification's question (`decompress_one_frame`)."""
    if not data:
        raise FrameError("empty file (0 bytes), not a zstd frame")
    decompressor = zstd.ZstdDecompressor()
    try:
        payload = decompressor.decompress(data, max_length=length)
        while len(payload) < length and not decompressor.eof and not decompressor.needs_input:
            payload += decompressor.decompress(b"", max_length=length - len(payload))
    except ZstdError as error:
        raise FrameError(f"not a zstd frame ({error})") from None
    return payload


def compress(payload: bytes, level: int = 3) -> bytes:
    """One zstd frame holding `payload`, as skycap writes it."""
    return zstd.compress(payload, level=level)
