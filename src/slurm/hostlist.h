// Slurm's compressed host lists ("node[1-3,7],gpu[01-02]-a") and per-node task counts
// ("2(x3),1"), as SLURM_STEP_NODELIST and SLURM_STEP_TASKS_PER_NODE write them.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "slurm/slurm_error.h"

namespace dtrain::slurm {

// Every host name of a host list, in Slurm's order. A bracket holds comma-separated numbers
// and ranges whose lower bound sets the zero-padded width ("[08-10]" -> 08, 09, 10); several
// brackets in one name multiply ("r[1-2]n[1-2]" -> r1n1, r1n2, r2n1, r2n2). Throws SlurmError
// naming the list on unbalanced brackets, empty names, a range that runs backwards or a list
// of more than a million hosts.
std::vector<std::string> expand_hostlist(std::string_view list);

// "2(x3),1" -> {2, 2, 2, 1}. Throws SlurmError naming the text when it is malformed.
std::vector<int> expand_tasks_per_node(std::string_view text);

}  // namespace dtrain::slurm
