"""On-disk cache of lowered kernels.

Key: SHA-256 over the generated Triton source (which encodes the kernel's IR for
one specialization), the kernel's Python source, the specialization, the target,
the compile options and the toolchain versions. Value: one JSON file with every
stage's output, the stage timings and the UB figures.

First compiles of the same key in several processes are serialised by an
exclusive ``flock`` on ``<key>.lock``: the first compiles and writes, the others
wait and then read. Each entry stores the SHA-256 of its payload; an entry that
does not check out (truncated, edited, of another shape or format, a directory in
its place) is compiled again and replaced, never fatal. Writes are atomic (temp
file + rename; ``dsl.diskcache``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path

from dsl import diskcache
from dsl.errors import SourceLoc
from dsl.targets import get_target
from lowering.compiler import LoweredKernel, StageReport, cache_dir, toolchain_versions
from lowering.triton_codegen import GeneratedKernel

FORMAT = 2  # 2: entries carry a content hash


def cache_key(*parts: str) -> str:
    digest = hashlib.sha256()
    for part in (f"format={FORMAT}", toolchain_versions(), *parts):
        digest.update(part.encode())
        digest.update(b"\0")
    return digest.hexdigest()


def _to_json(k: LoweredKernel) -> dict:
    g = k.generated
    return {
        "format": FORMAT, "name": k.name, "target": k.target.name,
        "generated": {"name": g.name, "source": g.source, "signature": g.signature,
                      "def_line": g.def_line,
                      "line_map": {str(line): [loc.file, loc.line, loc.col, loc.source_line]
                                   for line, loc in g.line_map.items()}},
        "ttir": k.ttir, "linalg": k.linalg, "hivm": k.hivm,
        "stages": [[s.name, s.ok, s.seconds, s.size, s.note] for s in k.stages],
        "ub": [k.ub_estimate_bytes, k.ub_measured_bytes, k.ub_capacity_bytes],
        "source_path": str(k.source_path), "extra": k.extra,
    }


def _from_json(data: dict) -> LoweredKernel:
    if data.get("format") != FORMAT:
        raise ValueError("cache entry of another format")
    g = data["generated"]
    generated = GeneratedKernel(
        g["name"], g["source"], dict(g["signature"]),
        {int(line): SourceLoc(*loc) for line, loc in g["line_map"].items()}, g["def_line"])
    estimate, measured, capacity = data["ub"]
    return LoweredKernel(
        data["name"], get_target(data["target"]), generated, data["ttir"], data["linalg"],
        data["hivm"], [StageReport(*s) for s in data["stages"]], estimate, measured, capacity,
        Path(data["source_path"]), dict(data.get("extra", {})))


def load_or_compile(key: str, compile: Callable[[], LoweredKernel],
                    root: Path | None = None) -> tuple[LoweredKernel, bool]:
    """The cached kernel for ``key``, or ``compile()`` it and store it. Returns
    (kernel, True if it was compiled now). An entry is used only when its content
    hash checks out and it has the expected shape; anything else (truncated, edited,
    valid JSON of another shape, a directory in its place) is compiled again and
    replaced atomically."""
    folder = (root or cache_dir()) / "lowered"
    entry = folder / f"{key}.json"
    with diskcache.locked(folder / f"{key}.lock"):
        cached = _read_entry(entry)
        if cached is not None:
            return cached, False
        kernel = compile()
        payload = json.dumps(_to_json(kernel), sort_keys=True)
        record = {"sha256": diskcache.sha256(payload.encode()), "payload": payload}
        diskcache.write_atomic(entry, json.dumps(record).encode())
        return kernel, True


def _read_entry(entry: Path) -> LoweredKernel | None:
    """The kernel stored in ``entry``, or None when it is absent or not trustworthy."""
    try:
        record = json.loads(entry.read_bytes())
        payload = record["payload"]
        if not isinstance(payload, str) or \
                diskcache.sha256(payload.encode()) != record["sha256"]:
            return None
        return _from_json(json.loads(payload))
    except (OSError, ValueError, KeyError, TypeError, AttributeError, IndexError):
        return None  # missing, a directory, corrupt, or of another shape
