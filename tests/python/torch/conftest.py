"""Runs the tests of a file that uses ``hvd`` inside one dtrain job.

Every rank of ``dtrain run -np N -- python3 -m pytest FILE`` collects the same tests in the
same order, so the collectives of each test meet their counterparts on the other ranks.
Files that do not import ``dtrain.torch as hvd`` (test_jobs.py starts its own launchers)
are left alone: nothing is initialized for them.
"""
import pytest

import dtrain.torch as hvd


@pytest.fixture(scope="module", autouse=True)
def initialized_job(request):
    """``hvd.init()`` before the first test of a module that uses ``hvd``."""
    if getattr(request.module, "hvd", None) is hvd and not hvd.is_initialized():
        hvd.init()
    yield


@pytest.fixture(scope="session", autouse=True)
def shut_down_at_the_end():
    """A last barrier, so that no rank leaves while others still communicate, then shutdown."""
    yield
    if hvd.is_initialized():
        hvd.barrier()
        hvd.shutdown()
