"""Python's cyclic garbage collector paused while gpufleet builds big data that holds no reference cycles.

Reading a fleet's files, or importing the engine, makes hundreds of thousands of dicts, lists and classes
and no garbage that only the collector could free (reference counting frees it all). Each collection those
allocations trigger walks everything made so far and frees nothing: at 10,000 nodes that walking costs about
a third of reading the files. The collector is paused for such work and runs again after it.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused(*, freeze: bool = False) -> Iterator[None]:
    """The block (or, as a decorator, the function) runs without cyclic collections; the collector is
    switched back on after it when it was on before.

    Switched back on, the collector's first collection walks every object the block made. With `freeze`,
    those objects are first moved out of its generations (`gc.freeze`): for what lives as long as the
    process, such as imported modules, which no collection could free."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if freeze:
            gc.freeze()
        if enabled:
            gc.enable()
