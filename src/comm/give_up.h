// A lost peer that ends the job (no survival in place): every wait of kolo's, on any thread and in any
// transport (MPI's requests, Gloo's buffers, the host's shared memory), gives up from then on, failing
// with why, instead of waiting for ever for the lost peer. Process-wide: the waits run on threads that
// hold no reference to the runtime, and a loss must reach all of them at once (docs/architecture.md
// lists it among the process-wide variables).
#pragma once

#include <functional>
#include <string>

#include "kolo/status.h"

namespace kolo {

// From now on every wait gives up with `why`; each interrupter registered is called once, now.
void give_up_waits(const std::string& why);
// OK, or the Aborted status a wait gives up with (`what` names the wait). Cheap: every wait polls it.
Status waits_given_up(const char* what);
bool waits_are_given_up();
// For waits that sleep until their data comes (Gloo's): called by give_up_waits, with its reason, to wake
// them; it must not call back into this file. Returns an id for remove_give_up_interrupter.
int add_give_up_interrupter(std::function<void(const std::string& why)> interrupt);
void remove_give_up_interrupter(int id);

}  // namespace kolo
