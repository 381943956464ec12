"""Start-up hook of the ``DSL_TRITON_INTERPRET`` switch, run by ``ascend_dsl_triton.pth``.

Python runs the ``.pth`` file's line in every process of the environment, so this
module imports nothing heavy: when ``DSL_TRITON_INTERPRET`` is set (to anything but
``0``/``false``/``no``/``off``) it registers a finder that waits for the script to
import ``triton.runtime.autotuner`` and then calls ``dsl.triton_compat.install()``,
so that every Triton kernel launched on CPU tensors runs in this project's
interpreter with no edit to the script. Without the variable it does nothing.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import os
import sys
from collections.abc import Callable
from typing import Any

_TRIGGER = "triton.runtime.autotuner"  # imported by `import triton`, after triton.runtime.jit


def requested() -> bool:
    """True when the environment asks for the switch."""
    value = os.environ.get("DSL_TRITON_INTERPRET", "").strip().lower()
    return value not in ("", "0", "false", "no", "off")


def _install() -> None:
    from dsl import triton_compat
    triton_compat.install()


# what to run once ``triton.runtime.autotuner`` is loaded, in order
_CALLBACKS: list[Callable[[], None]] = []


class _InstallAfterImport(importlib.abc.MetaPathFinder):
    """Lets ``triton.runtime.autotuner`` load as usual, then runs the callbacks."""

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name != _TRIGGER:
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return spec
        exec_module = spec.loader.exec_module

        def exec_then_install(module: Any) -> None:
            exec_module(module)
            sys.modules[name] = module
            for callback in _CALLBACKS:
                callback()
        spec.loader.exec_module = exec_then_install  # type: ignore[method-assign]
        return spec


def after_triton_loads(callback: Callable[[], None]) -> None:
    """Run ``callback`` now if Triton is loaded, else as soon as it is (once)."""
    if _TRIGGER in sys.modules:
        callback()
        return
    if callback not in _CALLBACKS:
        _CALLBACKS.append(callback)
    if not any(isinstance(f, _InstallAfterImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _InstallAfterImport())


def register() -> None:
    """Install the switch now if Triton is loaded, else as soon as it is."""
    if requested():
        after_triton_loads(_install)
