"""``hvd.SyncBatchNorm`` against ``torch.nn.BatchNorm*d`` on the concatenated batch.

In training mode every rank normalizes with the statistics of all ranks' batches together
(Horovod gathers each rank's count, mean and inverse std; batches may differ in size), so
a rank's output is its rows of what one BatchNorm computes over the concatenation, and the
running statistics follow the whole batch. Backward sums the statistics' gradients over
ranks: a rank's input gradient is its rows of the gradient of the sum of every rank's
loss, while the weight and bias gradients stay local (their sum over ranks is the
reference's). Float64 on the CPU throughout (Horovod itself insists on CUDA tensors).
"""
import pytest
import torch

import dtrain.torch as hvd
from multirank import assert_tensor, every_rank, rank_floats

C = 3
STEPS = 2  # two training passes: the running statistics must follow the momentum too
TOLERANCE = dict(rtol=1e-10, atol=1e-10)

CASES = {
    # name: (reference module, shape of rank r's batch)
    "2d_equal_batches": (torch.nn.BatchNorm2d, lambda r: (3, C, 4, 5)),
    "2d_uneven_batches": (torch.nn.BatchNorm2d, lambda r: (2 + r, C, 4, 5)),
    "1d_features": (torch.nn.BatchNorm1d, lambda r: (3 + 2 * r, C)),
    "1d_sequences": (torch.nn.BatchNorm1d, lambda r: (2 + r, C, 6)),
}


def make_pair(reference_class):
    """A SyncBatchNorm and a reference BatchNorm with the same (non-trivial) affine weights."""
    sync = hvd.SyncBatchNorm(C).double()
    reference = reference_class(C).double()
    with torch.no_grad():
        for module in (sync, reference):
            module.weight.copy_(1.0 + 0.25 * torch.arange(C, dtype=torch.float64))
            module.bias.copy_(0.1 * torch.arange(C, dtype=torch.float64) - 0.2)
    return sync, reference


def close(actual, expected):
    torch.testing.assert_close(actual.detach(), expected.detach(), **TOLERANCE)


@pytest.mark.parametrize("case", sorted(CASES))
def test_training_matches_batch_norm_on_the_concatenated_batch(case):
    reference_class, shape_of = CASES[case]
    sync, reference = make_pair(reference_class)
    assert isinstance(sync, torch.nn.modules.batchnorm._BatchNorm)
    rows = [shape_of(r)[0] for r in range(hvd.size())]
    start = sum(rows[:hvd.rank()])
    mine = slice(start, start + rows[hvd.rank()])

    outputs, input_grads, running = [], [], []
    for step in range(STEPS):
        # Means and scales differ between ranks, so the global statistics differ from local ones.
        x = (3.0 * rank_floats(hvd.rank(), shape_of(hvd.rank()), seed=100 * step) + hvd.rank()).requires_grad_()
        out = sync(x)
        (out * rank_floats(hvd.rank(), shape_of(hvd.rank()), seed=100 * step + 50)).sum().backward()
        outputs.append(out.detach())
        input_grads.append(x.grad)
        running.append((sync.running_mean.clone(), sync.running_var.clone(), int(sync.num_batches_tracked)))
    weight_grad = hvd.allreduce(sync.weight.grad, op=hvd.Sum, name=f"sbn.{case}.weight.grad")
    bias_grad = hvd.allreduce(sync.bias.grad, op=hvd.Sum, name=f"sbn.{case}.bias.grad")

    for step in range(STEPS):
        xs = every_rank(lambda r: 3.0 * rank_floats(r, shape_of(r), seed=100 * step) + r)
        upstream = every_rank(lambda r: rank_floats(r, shape_of(r), seed=100 * step + 50))
        x_all = torch.cat(xs).requires_grad_()
        out_all = reference(x_all)
        (out_all * torch.cat(upstream)).sum().backward()
        close(outputs[step], out_all[mine])
        close(input_grads[step], x_all.grad[mine])
        running_mean, running_var, batches = running[step]
        close(running_mean, reference.running_mean)
        close(running_var, reference.running_var)
        assert batches == int(reference.num_batches_tracked)
    close(weight_grad, reference.weight.grad)
    close(bias_grad, reference.bias.grad)


def test_eval_mode_uses_running_statistics_without_communicating():
    """In eval mode SyncBatchNorm is a plain BatchNorm with the running statistics: only
    rank 0 evaluates here, which would never finish if eval communicated."""
    sync, reference = make_pair(torch.nn.BatchNorm2d)
    with torch.no_grad():
        for module in (sync, reference):
            module.running_mean.copy_(torch.tensor([0.5, -1.0, 2.0], dtype=torch.float64))
            module.running_var.copy_(torch.tensor([1.5, 0.25, 4.0], dtype=torch.float64))
    sync.eval()
    reference.eval()
    x = rank_floats(0, (2, C, 3, 3), seed=999)
    result = sync(x) if hvd.rank() == 0 else None
    hvd.barrier()
    if hvd.rank() == 0:
        assert_tensor(result, reference(x))
