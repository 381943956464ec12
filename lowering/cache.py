"""On-disk cache of lowered kernels.

Key: SHA-256 over the generated Triton source (which encodes the kernel's IR for
one specialization), the kernel's Python source, the specialization, the target,
the compile options and the toolchain versions. Value: one JSON file with every
stage's output, the stage timings and the UB figures.

First compiles of the same key in several processes are serialised by an
exclusive ``flock`` on ``<key>.lock``: the first compiles and writes, the others
wait and then read. An entry that cannot be read back (truncated, edited, from an
older format) is compiled again and overwritten, never fatal. Writes are atomic
(temp file + rename).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path

from dsl.errors import SourceLoc
from dsl.targets import get_target
from lowering.compiler import LoweredKernel, StageReport, cache_dir, toolchain_versions
from lowering.triton_codegen import GeneratedKernel

FORMAT = 1


def cache_key(*parts: str) -> str:
    digest = hashlib.sha256()
    for part in (f"format={FORMAT}", toolchain_versions(), *parts):
        digest.update(part.encode())
        digest.update(b"\0")
    return digest.hexdigest()


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


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
    (kernel, True if it was compiled now)."""
    folder = (root or cache_dir()) / "lowered"
    entry = folder / f"{key}.json"
    with _locked(folder / f"{key}.lock"):
        if entry.exists():
            try:
                return _from_json(json.loads(entry.read_text())), False
            except (ValueError, KeyError, TypeError, json.JSONDecodeError):
                pass  # corrupt or stale: compile again below
        kernel = compile()
        tmp = entry.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(_to_json(kernel)))
        os.replace(tmp, entry)
        return kernel, True
