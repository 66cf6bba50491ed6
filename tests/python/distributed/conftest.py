"""Runs a test file as every rank of one job over torch.distributed's backend "dtrain".

Each rank of ``dtrain run -np N -- python3 -m pytest FILE`` makes "dtrain" its default group
(``init_method="env://"``, the store from dtrain's runtime) and a gloo group over the same
ranks: tests hold each call on "dtrain" against the same call on gloo.
"""
import datetime

import pytest
import torch.distributed as dist

import dtrain.torch  # noqa: F401  (registers the "dtrain" backend)



@pytest.fixture(scope="session")
def gloo():
    """A gloo group over every rank, beside the default "dtrain" group."""
    dist.init_process_group(backend="dtrain", timeout=datetime.timedelta(seconds=120))
    group = dist.new_group(backend="gloo")
    yield group
    dist.barrier()
    dist.destroy_process_group()
