// kolo's collectives for CPU tensors, one file each, written over an instance's Context (comm/context.h):
// the same code under MPI and under Gloo, the transport below the groups.
#pragma once

#include <memory>

#include "comm/collective.h"
#include "comm/context.h"

namespace kolo {

std::unique_ptr<Collective> make_host_allreduce(const Context& context, const CollectiveTuning& tuning);
std::unique_ptr<Collective> make_host_hierarchical_allreduce(const Context& context, const CollectiveTuning& tuning);
// Adasum (ReduceOp::kAdasum), registered beside the allreduce: the registry gives it only Adasum ops.
std::unique_ptr<Collective> make_host_adasum(const Context& context);
std::unique_ptr<Collective> make_host_allgather(const Context& context);
std::unique_ptr<Collective> make_host_hierarchical_allgather(const Context& context);
std::unique_ptr<Collective> make_host_broadcast(const Context& context, const CollectiveTuning& tuning);
std::unique_ptr<Collective> make_host_alltoall(const Context& context);
std::unique_ptr<Collective> make_host_reducescatter(const Context& context);

// A collective's name in the timeline: the context's transport and `what`, "MPI_ALLREDUCE".
std::string collective_name(const Context& context, const char* what);

}  // namespace kolo
