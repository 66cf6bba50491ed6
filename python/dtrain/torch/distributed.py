"""torch.distributed's backend ``"dtrain"``: DistributedDataParallel and the rest of
``torch.distributed`` over dtrain's runtime.

Importing ``dtrain.torch`` registers it; a script then changes one word::

    import dtrain.torch  # noqa: F401  (registers the backend)
    torch.distributed.init_process_group(backend="dtrain")

Where the world comes from:

* started by dtrain's launchers (``dtrain run`` and its forms, a bare ``srun``, ``mpirun``,
  ``dtrain job run``): from the launcher, as for any dtrain program. Importing this module sets
  torchrun's ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK`` and ``LOCAL_WORLD_SIZE`` from it where they
  are unset, and ``init_method="env://"`` then needs no ``MASTER_ADDR``/``MASTER_PORT``: rank 0
  serves PyTorch's store and the runtime tells the others where.
* anything else (torchrun, hand-set variables, ``tcp://``, a ``store=``): PyTorch's rank and
  size; rank 0 serves a rendezvous store for the runtime and tells the others where through
  PyTorch's store.

``timeout=`` bounds connecting and how long an operation waits for a peer that does not come.
"""
import datetime
import importlib
import ipaddress
import os
import secrets
import socket
from typing import Optional

import torch.distributed as dist

from dtrain.torch import _core

BACKEND_NAME = "dtrain"

# The key under which rank 0 publishes its rendezvous store, in PyTorch's store of the group.
_RENDEZVOUS_KEY = "dtrain/rendezvous"


def _launched_by_dtrain() -> bool:
    return "DTRAIN_SIZE" in os.environ


def _is_loopback(job_address: str) -> bool:
    if job_address == "localhost":
        return True
    try:
        return bool(job_address) and ipaddress.ip_address(job_address).is_loopback
    except ValueError:
        return False


def _address_towards(job_address: str) -> Optional[str]:
    """This host's address on the route to ``job_address`` (no packet is sent), or None."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.connect((job_address, 9))
            return probe.getsockname()[0]
    except OSError:
        return None


def _host_for_peers(job_address: str) -> str:
    """This host as the other ranks reach it: ``127.0.0.1`` for a job on loopback (its
    ``job_address``, PyTorch's ``MASTER_ADDR`` or the launcher's store, a loopback address, as
    on one machine), else ``DTRAIN_HOSTNAME``, else the address of the interface that reaches
    ``job_address`` (the host's name may resolve to an address the others cannot reach: Debian
    maps it to 127.0.1.1), else the host's name."""
    if _is_loopback(job_address):
        return "127.0.0.1"
    return os.environ.get("DTRAIN_HOSTNAME") or (job_address and _address_towards(job_address)) or socket.gethostname()


def _seconds(timeout: Optional[datetime.timedelta]) -> float:
    if timeout is None:
        return 1800.0
    return timeout.total_seconds()


def _start_runtime(store: dist.Store, rank: int, size: int, timeout_s: float) -> None:
    """Starts the runtime over the group's world (once per process)."""
    if _core.is_initialized():
        return
    if _launched_by_dtrain():
        _core.init()
        return
    if size == 1:
        _core.init_external(0, 1, "", 0, "", timeout_s)
        return
    master = os.environ.get("MASTER_ADDR", "")
    if "DTRAIN_HOSTNAME" not in os.environ and not _is_loopback(master):
        # The runtime binds its connections to this host's name, which across hosts must be
        # an address the others reach.
        os.environ["DTRAIN_HOSTNAME"] = _host_for_peers(master)
    if rank == 0:
        token = secrets.token_hex(16)
        port = _core.serve_rendezvous(token, size)
        store.set(_RENDEZVOUS_KEY, f"{_host_for_peers(os.environ.get('MASTER_ADDR', ''))} {port} {token}")
    store.wait([_RENDEZVOUS_KEY], datetime.timedelta(seconds=timeout_s))
    host, port, token = store.get(_RENDEZVOUS_KEY).decode().split(" ")
    _core.init_external(rank, size, host, int(port), token, timeout_s)


def _check_same_world(rank: int, size: int) -> None:
    if (_core.rank(), _core.size()) != (rank, size):
        raise RuntimeError(
            f"dtrain backend: torch.distributed calls this process rank {rank} of {size}, but dtrain's "
            f"launcher made it rank {_core.rank()} of {_core.size()}; set RANK and WORLD_SIZE as dtrain run "
            f"does (or leave them to it)")


def _started_by_torchrun() -> bool:
    """torchrun's (or hand-set) ``env://`` variables, in a process no dtrain launcher started."""
    return not _launched_by_dtrain() and all(
        name in os.environ for name in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"))


_torchrun_store: Optional[dist.Store] = None


def start_runtime_for_torchrun() -> bool:
    """``hvd.init()`` in a process torchrun started: the runtime meets the other ranks through
    torchrun's store (``env://``), as a ``"dtrain"`` process group would. False, and nothing
    started, when torchrun did not start this process."""
    global _torchrun_store
    if not _started_by_torchrun():
        return False
    timeout = datetime.timedelta(minutes=30)  # PyTorch's default for init_process_group
    store, rank, size = next(dist.rendezvous("env://", timeout=timeout))
    _torchrun_store = store  # the workers' connection to torchrun's store stays open
    _start_runtime(store, rank, size, timeout.total_seconds())
    return True


def _create_process_group(options, pg_options=None):
    """Backend factory (``Backend.register_backend(..., extended_api=True)``): PyTorch's group
    rank and size, its store, timeout and group name arrive in ``options``."""
    rank, size = options.group_rank, options.group_size
    timeout_s = _seconds(options.timeout)
    ranks = list(getattr(options, "global_ranks_in_group", []) or [])
    group_id = str(getattr(options, "group_id", "0"))
    world_size = dist.get_world_size() if dist.is_initialized() else size
    if ranks and ranks != list(range(world_size)):
        # new_group(ranks=...): PyTorch asks only the members, which become a process set of
        # their own; PyTorch's group ranks are their places in the sorted list.
        if not _core.is_initialized():
            raise RuntimeError(
                f"dtrain backend: a group over ranks {ranks} needs dtrain's runtime over the whole world, which only "
                f"a group of every rank starts: use backend 'dtrain' for init_process_group (or make a whole-world "
                f"'dtrain' group first)")
        if ranks != sorted(ranks):
            raise RuntimeError(f"dtrain backend: a group's ranks must be ascending, got {ranks}")
        process_set = _core.connect_process_set(f"torch.group{group_id}", ranks)
        return _core.create_process_group(rank, size, group_id, process_set)
    _start_runtime(options.store, rank, size, timeout_s)
    _check_same_world(rank, size)
    return _core.create_process_group(rank, size, group_id, _core.ProcessSet())


def _register() -> None:
    if BACKEND_NAME.upper() in getattr(dist.Backend, "_plugins", {}):
        return
    # Both devices, so that plain "dtrain" serves CPU and CUDA tensors, and
    # "cpu:dtrain,cuda:nccl" picks it for the CPU ones alone.
    dist.Backend.register_backend(BACKEND_NAME, _create_process_group, extended_api=True,
                                  devices=["cpu", "cuda"])


def _launcher_placement() -> Optional[tuple]:
    """(rank, size, local_rank, local_size) when dtrain run, srun or mpirun started this process
    as one of several, else None."""
    try:
        placement = _core.placement_from_environment()
    except RuntimeError:
        return None  # a malformed launcher variable: init() names it when the program starts
    return placement if placement[1] > 1 else None


def _fill_torch_environment() -> None:
    """Gives a process that a launcher started the variables torchrun would have set, so that
    scripts reading ``LOCAL_RANK`` and ``init_method="env://"`` find them. Variables already set
    (torchrun's, the user's) are left alone."""
    if "RANK" in os.environ or "DTRAIN_ELASTIC_WORKER" in os.environ:
        return
    placement = _launcher_placement()
    if placement is None:
        return
    rank, size, local_rank, local_size = placement
    for name, value in (("RANK", rank), ("WORLD_SIZE", size), ("LOCAL_RANK", local_rank),
                        ("LOCAL_WORLD_SIZE", local_size)):
        os.environ.setdefault(name, str(value))


_store_bootstraps = 0


def _store_from_runtime(timeout: datetime.timedelta) -> dist.Store:
    """PyTorch's store for a world dtrain's launcher made: the runtime starts from the launcher's
    environment, rank 0 serves a TCPStore on an ephemeral port and broadcasts where."""
    global _store_bootstraps
    _core.init()
    rank, size = _core.rank(), _core.size()
    host = _host_for_peers(os.environ.get("DTRAIN_RENDEZVOUS_ADDR", ""))
    # Not waiting for the others to connect: they learn the port only after this returns.
    store = dist.TCPStore(host, 0, size, True, timeout, wait_for_workers=False) if rank == 0 else None
    address = f"{host} {store.port}".encode() if store is not None else b""
    address = _core.broadcast_object(address, 0, f"dtrain.torch.store.{_store_bootstraps}", _core.ProcessSet()).decode()
    _store_bootstraps += 1
    if store is None:
        master, port = address.split(" ")
        store = dist.TCPStore(master, int(port), size, False, timeout)
    return store


def _install_env_rendezvous() -> None:
    """Lets ``init_method="env://"`` (PyTorch's default) work without ``MASTER_ADDR`` and
    ``MASTER_PORT`` in a job dtrain run, srun or mpirun started: the store then comes from
    dtrain's runtime. With those variables set, PyTorch's own handler runs, unchanged."""
    # The module, not the function torch.distributed re-exports under the same name.
    torch_rendezvous = importlib.import_module("torch.distributed.rendezvous")
    handlers = getattr(torch_rendezvous, "_rendezvous_handlers", None)
    original = handlers.get("env") if isinstance(handlers, dict) else None
    if original is None or getattr(original, "_dtrain", False):
        return

    def env_rendezvous(url: str, timeout: datetime.timedelta = datetime.timedelta(minutes=30), **kwargs):
        if "MASTER_ADDR" in os.environ or _launcher_placement() is None:
            yield from original(url, timeout=timeout, **kwargs)
            return
        store = _store_from_runtime(timeout)
        yield store, _core.rank(), _core.size()
        raise RuntimeError("dtrain: env:// rendezvous cannot be repeated in one world")

    env_rendezvous._dtrain = True
    handlers["env"] = env_rendezvous


if dist.is_available():
    _register()
    _fill_torch_environment()
    _install_env_rendezvous()
