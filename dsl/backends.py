"""How the language finds its backends, without importing them.

``dsl`` owns the language and the IR and imports nothing from ``lowering``: the
backends (the NumPy interpreter, compiled-CPU mode, the NPU runtime, lowering to
HIVM) live in a registry that ``lowering/backends.py`` defines and that the
package's metadata announces under the entry-point group ``ascend_dsl.backends``
(``pyproject.toml``). ``get_backend(name)`` returns one instance per name: it looks
in this package's own registry first (loaded by reference, no metadata scan), then
in every announced registry, loaded once per process. Another package can add
backends by announcing its own registry in the same group.

The three interfaces a backend may offer (a registry entry offers one or more):

- ``run(launch, options)``: execute a prepared CPU launch (``dsl.jit.Launch``:
  specialized IR, runtime arguments, grid, bound NumPy buffers);
- ``launch_on_device(kernel, binding, grid, options)``: compile and launch a
  kernel whose tensors live in a device's memory (``dsl.jit.Binding``);
- ``lower(kernel, specs, open_blocks, target, options)``: lower one
  specialization for a chip and return what the stages produced.
"""

from __future__ import annotations

import functools
import importlib
import threading
from collections.abc import Callable, Mapping
from importlib.metadata import entry_points
from typing import Any

from dsl.errors import DSLError

ENTRY_POINT_GROUP = "ascend_dsl.backends"
# Used only when no registry is announced (a source checkout run without
# ``pip install -e .``, which is what writes the entry points).
FALLBACK_REGISTRY = "lowering.backends:REGISTRY"

_instances: dict[str, Any] = {}
_lock = threading.Lock()


class UnknownBackendError(DSLError, ValueError):
    """No registered backend has the requested name (a ``DSLError``; a ``ValueError``
    as it always was)."""


def _load(reference: str) -> Mapping[str, Callable[[], Any]]:
    module, _, attribute = reference.partition(":")
    return getattr(importlib.import_module(module), attribute)


@functools.cache
def registry() -> dict[str, Callable[[], Any]]:
    """Backend name -> factory, merged from every announced registry."""
    merged: dict[str, Callable[[], Any]] = {}
    announced = list(entry_points(group=ENTRY_POINT_GROUP))
    for entry in announced:
        merged.update(entry.load())
    if not announced:
        merged.update(_load(FALLBACK_REGISTRY))
    return merged


def backend_names() -> list[str]:
    """The registered backend names."""
    return sorted(registry())


@functools.cache
def _own_registry() -> Mapping[str, Callable[[], Any]]:
    """This package's own registry, loaded by its reference: the names every launch
    asks for, found without reading every installed package's metadata (~30-80 ms
    on a first launch, measured)."""
    try:
        return _load(FALLBACK_REGISTRY)
    except ImportError:
        return {}


def get_backend(name: str) -> Any:
    """The backend registered as ``name`` (one instance per process): this package's
    own first, then the registries other packages announce."""
    with _lock:
        backend = _instances.get(name)
        if backend is None:
            factory = _own_registry().get(name) or registry().get(name)
            if factory is None:
                raise UnknownBackendError(f"unknown backend {name!r}; registered: "
                                          f"{', '.join(backend_names())}")
            backend = _instances[name] = factory()
        return backend
