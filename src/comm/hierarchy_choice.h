// Flat and hierarchical allreduce side by side, for KOLO_AUTOTUNE to choose between on a live job:
// whichever the last tuning asked for runs (CollectiveTuning::hierarchical; every rank switches at the
// same cycle, so all run the same one).
#pragma once

#include <memory>

#include "comm/collective.h"

namespace kolo {

std::unique_ptr<Collective> make_hierarchy_choice(std::unique_ptr<Collective> flat,
                                                  std::unique_ptr<Collective> hierarchical, bool start_hierarchical);

}  // namespace kolo
