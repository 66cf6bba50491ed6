"""dtrain.torch on CUDA tensors, for the GPU machine (scripts/gpu/test): every rank on the GPU
its local rank picks, collectives whose results stay on that GPU, and DistributedOptimizer
training a small model on the GPU to the weights the same training reaches on the CPU in
one process. Prints "cuda check passed on rank R" or raises.

    dtrain run -np 2 -- python3 tests/python/torch/cuda_check.py
"""
import torch

import dtrain.torch as hvd


def main() -> None:
    hvd.init()
    assert torch.cuda.is_available(), "no CUDA device"
    device = torch.device("cuda", hvd.local_rank() % torch.cuda.device_count())
    torch.cuda.set_device(device)
    r, n = hvd.rank(), hvd.size()

    x = torch.arange(6, dtype=torch.float32, device=device) + r
    expected = sum(torch.arange(6, dtype=torch.float32) + k for k in range(n))
    summed = hvd.allreduce(x, op=hvd.Sum, name="cuda.sum")
    assert summed.device == device and torch.equal(summed.cpu(), expected), summed
    averaged = hvd.allreduce(x, name="cuda.average")
    assert torch.allclose(averaged.cpu(), expected / n), averaged
    gathered = hvd.allgather(torch.full((r + 1, 2), float(r), device=device), name="cuda.allgather")
    assert gathered.device == device and gathered.shape == (n * (n + 1) // 2, 2), gathered.shape
    root = hvd.broadcast(torch.full((3,), float(r), device=device), 0, name="cuda.broadcast")
    assert torch.equal(root.cpu(), torch.zeros(3)), root

    # Training: each rank's shard of a fixed data set against one process on all of it.
    torch.manual_seed(0)
    data = torch.randn(8 * n, 4, dtype=torch.float64)
    target = torch.randn(8 * n, 1, dtype=torch.float64)
    reference = torch.nn.Linear(4, 1).double()
    model = torch.nn.Linear(4, 1).double().to(device)
    model.load_state_dict(reference.state_dict())
    optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9),
                                         named_parameters=model.named_parameters())
    reference_optimizer = torch.optim.SGD(reference.parameters(), lr=0.1, momentum=0.9)
    mine = slice(8 * r, 8 * (r + 1))
    for _ in range(5):
        optimizer.zero_grad()
        torch.nn.functional.mse_loss(model(data[mine].to(device)), target[mine].to(device)).backward()
        optimizer.step()
        reference_optimizer.zero_grad()
        torch.nn.functional.mse_loss(reference(data), target).backward()
        reference_optimizer.step()
    for name, p in model.named_parameters():
        q = dict(reference.named_parameters())[name]
        assert torch.allclose(p.detach().cpu(), q.detach(), atol=1e-9), (name, p, q)
    print(f"cuda check passed on rank {r}", flush=True)
    hvd.shutdown()


if __name__ == "__main__":
    main()
