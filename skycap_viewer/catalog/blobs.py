"""The index's stored blobs: a row's JSON, one zstd frame at level 1, and its kept fields, marshalled.

A run keeps both per record, written once per document at index time and read per listed row or
group member. zstd at level 1 packs a row's few KiB of JSON as tightly as zlib's fastest level,
in a third of the time both ways; a compressor kept per thread spares the set-up that dominated a
small row's cost.
"""

import marshal
import threading

from skycap_viewer.record.frames import zstd

_per_thread = threading.local()


def squeezed(data: bytes) -> bytes:
    """`data` as one zstd frame (level 1), from this thread's compressor."""
    compressor = getattr(_per_thread, "compressor", None)
    if compressor is None:
        compressor = _per_thread.compressor = zstd.ZstdCompressor(level=1)
    return compressor.compress(data, zstd.ZstdCompressor.FLUSH_FRAME)


def unsqueezed(blob: bytes) -> bytes:
    """The bytes `squeezed` packed (the index's own blobs: no ceiling needed, it wrote them)."""
    return zstd.decompress(blob)


def pack(value) -> bytes:
    """Plain values (a row's kept fields, ~400 bytes) as a blob: marshal alone. Squeezing saved a
    quarter of them and cost a decompression each time a group's members are read."""
    return marshal.dumps(value)


def unpack(blob: bytes):
    return marshal.loads(blob)
