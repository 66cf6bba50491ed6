// The process sets of the running init() (dtrain::ProcessSet in dtrain.h): the loop an
// operation on a set runs on, and the sets' end at shutdown.
#pragma once

#include <memory>
#include <string>

#include "dtrain/dtrain.h"
#include "runtime/background_loop.h"

namespace dtrain::runtime {

// The loop that runs `set`'s operations on this rank. Throws an Error starting with `what`
// when the set has ended or this rank is not one of its members.
std::shared_ptr<BackgroundLoop> process_set_loop(const ProcessSet& set, const std::string& what);

// For shutdown(): ends every set (each set's members stop its loop together), before the job's loop.
void end_process_sets();

// api.cc's: the job's loop. Throws when dtrain is not initialised.
std::shared_ptr<BackgroundLoop> job_loop(const char* what);

// api.cc's: a blocking allgather over the job under `name`, which may be one users cannot
// submit (starting with "__dtrain"): the runtime's own agreements.
CollectiveResult allgather_reserved(const std::string& name, const TensorView& input);

}  // namespace dtrain::runtime
