"""``triton.language.extra.cann`` for a triton-ascend wheel that predates it.

triton-ascend 3.5 checkouts import ``triton.language.extra.cann.extension`` (Ascend
builtins such as ``extract_slice``, ``insert_slice``, ``parallel``) and
``triton.language.extra.cann.libdevice``; the 3.2 wheel has the same builtins directly
in ``triton.language`` and its libdevice in ``triton.language.extra.ascend``. When the
installed Triton has no ``cann`` package, :func:`install` registers one whose
``extension`` resolves names in ``triton.language`` and whose ``libdevice`` is the
wheel's Ascend libdevice. Under ascend-dsl's runner (``DSL_TRITON_INTERPRET=1``) a
name ``triton.language`` lacks resolves to ascend-dsl's builtin of that name where
there is one (``sub_vec_id``, ``sub_vec_num``, ``PIPE``:
``dsl.triton_compat.missing_attribute``). A name none has raises an
``AttributeError`` that says so. Nothing happens when the real package exists.

Newer checkouts also ship ``triton.language.extra.kernels``, kernels written in the
Triton language (``gather_2d_simd``), from ``third_party/ascend/language/kernels``.
:func:`install_kernels` loads that package from the checkout itself (its path in
``DSL_SUITE_CHECKOUT``) when the installed Triton lacks it: the kernels are the
checkout's code, run as any test's kernels are.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import types
from pathlib import Path
from typing import Any

PACKAGE = "triton.language.extra.cann"


def _missing(name: str) -> AttributeError:
    import triton

    installed = f"the installed triton {triton.__version__}"
    return AttributeError(f"{PACKAGE}.extension alias: {name} is not in {installed}")


def install() -> bool:
    """Register the alias package if Triton lacks it; True if it did."""
    try:
        importlib.import_module(PACKAGE)
        return False
    except ImportError:
        pass
    import triton.language as tl
    import triton.language.extra as extra

    libdevice = importlib.import_module("triton.language.extra.ascend.libdevice")
    cann = types.ModuleType(PACKAGE, __doc__)
    cann.__path__ = []  # a package, so the submodule imports below resolve
    extension = types.ModuleType(f"{PACKAGE}.extension", "triton.language, under its 3.5 name")

    def __getattr__(name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        try:
            return getattr(tl, name)
        except AttributeError:
            pass
        if os.environ.get("DSL_TRITON_INTERPRET") == "1":  # ascend-dsl's runner
            from dsl.triton_compat import missing_attribute

            found = missing_attribute(extension, name)
            if found is not None:
                return found
        raise _missing(name)

    extension.__getattr__ = __getattr__
    cann.extension = extension
    cann.libdevice = libdevice
    sys.modules[PACKAGE] = cann
    sys.modules[f"{PACKAGE}.extension"] = extension
    sys.modules[f"{PACKAGE}.libdevice"] = libdevice
    extra.cann = cann
    return True


KERNELS = "triton.language.extra.kernels"
KERNELS_SOURCE = Path("third_party", "ascend", "language", "kernels")


def install_kernels(checkout: str | None) -> bool:
    """Register the checkout's ``kernels`` package if Triton lacks it; True if it did."""
    try:
        importlib.import_module(KERNELS)
        return False
    except ImportError:
        pass
    if not checkout or not (Path(checkout) / KERNELS_SOURCE / "__init__.py").is_file():
        return False
    import triton.language.extra as extra

    folder = Path(checkout) / KERNELS_SOURCE
    spec = importlib.util.spec_from_file_location(
        KERNELS, folder / "__init__.py", submodule_search_locations=[str(folder)])
    module = importlib.util.module_from_spec(spec)
    sys.modules[KERNELS] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[KERNELS]
        raise
    extra.kernels = module
    return True
