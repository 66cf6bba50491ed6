// How much the background loop's thread yields to the computation.
//
// Where a host's ranks are as many as the cores they may run on, every core is busy with
// the computation, and the loop's thread moving gradients during backward only takes turns
// with it: two ranks on a 2-core host trained Mask R-CNN 2.5-5% slower that way than when the
// loop's thread ran only where a core was free (docs/performance.md, "Scaling against PyTorch
// DDP: Mask R-CNN"). There the loop's thread runs at the lowest priority (nice 19): it
// moves gradients in the gaps, and at the latest when the computation waits for them (a
// waiting thread runs the cycles itself, at its own priority). With a core to spare it keeps
// the default priority and overlaps the exchange with backward.
//
// Not where the process sees a GPU: there the computation mostly waits for the GPU, and the
// loop's thread must launch the gradients' collectives promptly; besides, threads started
// from it (NCCL's, at the first CUDA collective) would inherit its priority, and a nice
// value, once raised, cannot be lowered again without privilege.
#pragma once

namespace dtrain::runtime {

struct RuntimeConfig;

// DTRAIN_BACKGROUND_NICE when set (config.background_nice >= 0); otherwise 19 when this
// host's ranks are at least as many as `usable_cores` and the process sees no CUDA device,
// else 0. `cuda_devices` is asked only in that case (it loads the CUDA driver).
int background_nice(const RuntimeConfig& config, int usable_cores, int (*cuda_devices)());

// The cores this process may run on (its CPU affinity; at least 1).
int usable_cores();

// Called by the loop's thread as it starts: sets its nice value to background_nice(), and
// says so on rank 0 (a refusal is a warning: the loop then runs at the default priority).
void lower_loop_thread_priority(const RuntimeConfig& config);

}  // namespace dtrain::runtime
