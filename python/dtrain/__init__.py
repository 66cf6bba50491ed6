"""dtrain: data-parallel training on a C++ runtime (negotiation, fusion, shared memory, Gloo,
Open MPI, NCCL). ``dtrain.torch`` gives PyTorch programs Horovod's API over it::

    import dtrain.torch as hvd
"""
__version__ = "0.1.0"
