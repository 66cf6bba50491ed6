// A worker's side of the elastic protocol (rendezvous/elastic_round.h): asking the launcher's
// elastic driver for a new world and reading its answer, and rank 0's look at the workers
// waiting to join. Plain store traffic, no collectives.
#pragma once

#include "rendezvous/elastic_round.h"
#include "runtime/environment.h"

namespace dtrain::runtime {

// Posts this worker's wish for a round newer than `last_round` and waits until the driver
// publishes one that lists this worker, and returns it; throws Error when the driver closed
// the rounds (the job is ending). Waits as long as the driver does: the driver, not the
// worker, owns the deadlines (a worker it gives up on, it stops). A store out of reach (this
// worker cut off) is tried again until it has been so for 2 x DTRAIN_TIMEOUT_S, long after the
// driver would have given up on a member that cannot ask.
rendezvous::ElasticRound join_next_round(const RuntimeConfig& config, int last_round);

// How many started workers wait to join the world (0 when the store does not say, or cannot
// be reached).
int workers_waiting_to_join(const RuntimeConfig& config);

// The round of the running world (0 outside an elastic job); defined with the lifecycle (api.cc).
int current_elastic_round();

// Takes a round's rank and size into `config` (local and cross values are found at connect).
void adopt_round(RuntimeConfig& config, const rendezvous::ElasticRound& round);

}  // namespace dtrain::runtime
