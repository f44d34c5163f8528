// A barrier needs no data: the negotiation that finds every rank has submitted it is the barrier.
#pragma once

#include <memory>

#include "comm/collective.h"

namespace kolo {

std::unique_ptr<Collective> make_negotiated_barrier();

}  // namespace kolo
