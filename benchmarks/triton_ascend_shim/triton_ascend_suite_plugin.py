"""pytest plugin (``-p triton_ascend_suite_plugin``) that lets triton-ascend's
unittest/pytest_ut conftest.py and test_common.py run unchanged on one CPU:

* ``worker_id`` returns ``"master"`` when pytest-xdist is not installed (the
  conftests pick an NPU from it);
* the ``backend`` marker (``@pytest.mark.backend("torch_npu")``) is registered;
* with ``-p no:cacheprovider`` (the suite never writes into the checkout) an
  in-memory ``cache`` fixture stands in for pytest's, for test_common's
  ``pytest_runonce``.
"""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest

HAS_XDIST = importlib.util.find_spec("xdist") is not None


class MemoryCache:
    """The ``get``/``set`` part of pytest's ``config.cache``, kept in memory."""

    def __init__(self) -> None:
        self._values: dict[str, Any] = {}

    def get(self, key: str, default: Any) -> Any:
        return self._values.get(key, default)

    def set(self, key: str, value: Any) -> None:
        self._values[key] = value

    def mkdir(self, name: str) -> Any:
        raise RuntimeError("the suite runs pytest without a cache folder (-p no:cacheprovider)")


class MemoryCachePlugin:
    def __init__(self) -> None:
        self.store = MemoryCache()

    @pytest.fixture
    def cache(self) -> MemoryCache:
        return self.store


if not HAS_XDIST:

    @pytest.fixture(scope="session")
    def worker_id() -> str:
        return "master"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "backend(name): the framework a test runs on (torch_npu, mindspore)")
    if not config.pluginmanager.has_plugin("cacheprovider"):
        config.pluginmanager.register(MemoryCachePlugin(), "triton-ascend-suite-memory-cache")
