"""One node's routed experts at one layer, read from the experts sidecar without the rest (format §5.2).

`routed_experts` is `[R, layers, k]` ids (uint8, uint16, int16 or int32, as the engine sent them);
a node's rows are `[experts_offset, experts_offset + experts_rows)`, one per token. It is a record's
largest sidecar (~12 MB for 32k tokens), so a request decompresses it only as far as the last row
it asks for and decodes that layer's k ids of those rows alone.
"""

import sys
from array import array
from dataclasses import dataclass
from pathlib import Path

from skycap_viewer.errors import RecordError
from skycap_viewer.record.document import read_regular_file
from skycap_viewer.record.frames import FrameError, decompress_prefix
from skycap_viewer.record.manifest import DTYPE_SIZES, manifest_problems
from skycap_viewer.record.sidecars import TYPECODES


@dataclass(frozen=True)
class ExpertsArray:
    """Where `routed_experts` lies in its sidecar's payload, and its shape, as the manifest says."""

    path: Path
    dtype: str
    offset: int
    rows: int
    layers: int
    k: int

    @classmethod
    def of(cls, path: Path, manifest: dict) -> "ExpertsArray":
        """The array the manifest describes; `RecordError` when it is no `[R, layers, k]` array of an id dtype."""
        problems = manifest_problems("experts", manifest)
        if problems:
            raise RecordError(path, "; ".join(problems))
        spec = manifest["arrays"]["routed_experts"]
        if len(spec["shape"]) != 3:
            raise RecordError(path, f"routed_experts has shape {spec['shape']}, expected [rows, layers, k]")
        return cls(path, spec["dtype"], spec["offset"], *spec["shape"])

    def layer_rows(self, first: int, count: int, layer: int) -> list[list[int]]:
        """The k ids of `layer` in rows `[first, first + count)`, decompressing the sidecar only up to
        the last of them; `RecordError` when the file ends before it or is no zstd frame."""
        if first < 0 or first + count > self.rows:
            raise RecordError(self.path, f"rows [{first}, {first + count}) run past the {self.rows} rows"
                                         " of routed_experts")
        size = DTYPE_SIZES[self.dtype]
        row_bytes = self.layers * self.k * size
        start = self.offset + first * row_bytes
        need = start + count * row_bytes
        try:
            payload = decompress_prefix(read_regular_file(self.path, "sidecar"), need)
        except FrameError as error:
            raise RecordError(self.path, str(error)) from None
        if len(payload) < need:
            raise RecordError(self.path, f"the payload ends at byte {len(payload)}, before row {first + count} of "
                                         f"routed_experts (byte {need})")
        view = memoryview(payload)
        at, width = start + layer * self.k * size, self.k * size
        rows = []
        for _ in range(count):
            values = array(TYPECODES[self.dtype])
            values.frombytes(view[at : at + width])
            if sys.byteorder == "big" and size > 1:
                values.byteswap()
            rows.append(values.tolist())
            at += row_bytes
        return rows
