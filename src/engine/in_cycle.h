// Whether this thread runs one of an engine's cycles (engine.cc, engine_express.cc): an op's callback
// that makes a blocking call there must not drive, since the cycle lock is this thread's already.
#pragma once

namespace kolo {

inline thread_local bool t_in_cycle = false;

struct InCycle {
  InCycle() { t_in_cycle = true; }
  ~InCycle() { t_in_cycle = false; }
};

}  // namespace kolo
