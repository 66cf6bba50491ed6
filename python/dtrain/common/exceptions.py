"""The exceptions a dtrain program meets, under the names Horovod programs catch them by."""


class HorovodInternalError(RuntimeError):
    """A collective failed: ranks disagreed about it, a peer is gone, or the runtime stopped.

    The message is the runtime's, naming the operation and the ranks involved.
    """


class WorkersLostError(HorovodInternalError):
    """A peer stopped answering (it exited, was killed, or stalled past DTRAIN_TIMEOUT_S).

    Every pending and later collective of this world fails with it. ``elastic.run`` recovers
    from it by forming a new world; any other program ends.
    """


class HostsUpdatedInterrupt(RuntimeError):
    """Raised by ``State.commit()`` on every rank when workers wait to join an elastic world."""

    def __init__(self, skip_sync: bool = False) -> None:
        super().__init__("dtrain: elastic: workers wait to join the world")
        self.skip_sync = skip_sync


# dtrain's own name for the failure of any collective.
DtrainError = HorovodInternalError
