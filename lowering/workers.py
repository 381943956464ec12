"""The worker threads that backends share for independent pieces of a launch.

The interpreter runs chunks whose stores are proved disjoint on these threads
(NumPy releases the GIL inside its loops), and compiled-CPU mode runs programs on
them (ctypes releases the GIL). One pool per process, started on first use and
sized by the first caller's ``Options.workers``; ``run_all`` uses at most the
count a call asks for.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

_pool: ThreadPoolExecutor | None = None
_pool_size = 0
_lock = threading.Lock()


def _executor(workers: int) -> ThreadPoolExecutor:
    global _pool, _pool_size
    with _lock:
        if _pool is None or _pool_size < workers:
            old = _pool
            _pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="dsl-worker")
            _pool_size = workers
            if old is not None:
                old.shutdown(wait=False)
        return _pool


def run_all(tasks: Sequence[Callable[[], None]], workers: int) -> None:
    """Run ``tasks`` on up to ``workers`` threads and wait for all of them; the
    first exception raised by a task is re-raised here (after all have finished)."""
    if workers < 2 or len(tasks) < 2:
        for task in tasks:
            task()
        return
    futures = [_executor(workers).submit(task) for task in tasks]
    errors = []
    for future in futures:
        try:
            future.result()
        except BaseException as exc:  # noqa: BLE001 - re-raised below, after the others
            errors.append(exc)
    if errors:
        raise errors[0]
