"""Small safetensors reader and writer shared by the hand-run fixture scripts
(tests/make_fixtures.py, tests/make_optim_fixtures.py). Standard library + numpy + torch only; no
dependency on the `safetensors` package.

File layout: 8-byte little-endian header length N, N bytes of JSON header (padded with spaces so
that 8 + N is a multiple of 8), then the tensor data back to back. Dtypes: F32, F64, I32, I64.
"""
import json
import os
import struct

import numpy as np
import torch

_DT = {"F32": ("<f4", torch.float32), "F64": ("<f8", torch.float64),
       "I32": ("<i4", torch.int32), "I64": ("<i8", torch.int64)}
_TORCH_TO_DT = {v[1]: k for k, v in _DT.items()}


def st_write(path, tensors, metadata, order="aligned", metadata_first=True):
    """Write tensors (dict name -> torch tensor, F32/F64/I32/I64) and metadata (values converted
    with str()) to path, through path + ".tmp" and an atomic rename.

    order="aligned": 8-byte dtypes first, then 4-byte ones, by name within each (so every tensor
    is naturally aligned in the file). order="insertion": the dict's insertion order.
    metadata_first: put "__metadata__" first in the JSON header (else last)."""
    if order == "aligned":
        names = sorted(tensors, key=lambda n: (-tensors[n].element_size(), n))
    elif order == "insertion":
        names = list(tensors)
    else:
        raise ValueError(f"st_write: unknown order {order!r}")
    meta = {k: str(v) for k, v in metadata.items()}
    header = {"__metadata__": meta} if metadata_first else {}
    blobs, off = [], 0
    for name in names:
        t = tensors[name].detach().cpu().contiguous()
        dt = _TORCH_TO_DT[t.dtype]
        b = t.numpy().astype(_DT[dt][0], copy=False).tobytes()
        header[name] = {"dtype": dt, "shape": list(t.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    if not metadata_first:
        header["__metadata__"] = meta
    h = json.dumps(header, separators=(",", ":")).encode("utf-8")
    h += b" " * ((8 - (8 + len(h)) % 8) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)
    os.replace(tmp, path)


def st_read(path, require_padded_header=False):
    """-> (dict name -> torch tensor in its stored dtype, in data-offset order; metadata dict).
    Checks the layout strictly: offsets match shapes, no hole, overlap or trailing bytes; with
    require_padded_header, also that 8 + N is a multiple of 8."""
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 8:
        raise ValueError(f"{path}: truncated (no header length)")
    (n,) = struct.unpack("<Q", raw[:8])
    if 8 + n > len(raw):
        raise ValueError(f"{path}: header length {n} exceeds file size {len(raw)}")
    if require_padded_header and (8 + n) % 8:
        raise ValueError(f"{path}: header not padded to a multiple of 8 bytes")
    header = json.loads(raw[8:8 + n].decode("utf-8"))
    meta = header.pop("__metadata__", {}) or {}
    data = raw[8 + n:]
    entries = []
    for name, e in header.items():
        npdt, _ = _DT[e["dtype"]]
        b, end = e["data_offsets"]
        count = int(np.prod(e["shape"], dtype=np.int64)) if e["shape"] else 1
        if end - b != count * np.dtype(npdt).itemsize or end > len(data):
            raise ValueError(f"{path}: tensor {name}: bad data_offsets {e['data_offsets']}")
        arr = np.frombuffer(data, dtype=npdt, count=count, offset=b).reshape(e["shape"])
        entries.append((b, end, name, torch.from_numpy(arr.astype(arr.dtype.newbyteorder("="), copy=True))))
    entries.sort(key=lambda x: (x[0], x[1]))
    out, pos = {}, 0
    for b, end, name, t in entries:
        if b != pos:
            raise ValueError(f"{path}: hole or overlap in the data buffer at byte {pos}")
        out[name] = t
        pos = end
    if pos != len(data):
        raise ValueError(f"{path}: {len(data) - pos} trailing bytes after the last tensor")
    return out, meta
