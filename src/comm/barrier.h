// Ops without data: a barrier (the negotiation that finds every rank has submitted it is the
// barrier) and a join (complete once every rank has joined; it reports the last one).
#pragma once

#include <memory>

#include "comm/collective.h"

namespace kolo {

std::unique_ptr<Collective> make_negotiated_barrier();

}  // namespace kolo
