// After a loss in place (comm/world.h, shrink_to_survivors and agree_and), the Gloo world's survivors agree
// through the job's store, where ULFM agrees over MPI. The store is one server, so there is one answer:
// the first survivor to know who is left writes it with a compare-and-set, and every other reads that one.
// Never two worlds training apart: a rank cut off from the store cannot learn the answer, and one that
// comes after it was written is not in it and must end.
//
// Who is left: every rank of the generation that failed says it is here, under the next generation's keys.
// A rank that has not said so is counted out once its process is gone (its held key went with its
// connection: kolo's own store tells a killed rank at once; liveness.h; a rank lost between agreeing on the
// failed generation and entering it has no held key there, so its key of the generation before is asked),
// once its liveness counter has stood
// still for `lost_after_seconds` (frozen, or cut off: the peer timeout), or once rank 0's peer watch has
// named it lost. A rank whose counter moves is waited for: it is alive, and its next op will tell it of the
// loss.
#pragma once

#include <string>
#include <vector>

#include "kolo/status.h"
#include "store/key_value_store.h"

namespace kolo {

struct Generation {
  std::string prefix;  // its keys: "kolo/<job>/<start>/" for the first, then "<that>g<n>/"
  int rank = 0, size = 1;
  std::string previous;  // the prefix of the generation its members agreed in ("" for the first)
};

struct SurvivorsAgreed {
  std::vector<int> members;  // the ranks of the failed generation that go on, ascending
  std::string nonce;         // the proposer's: what identifies the next generation's ranks to each other
};

// Collective over the survivors of `failed`; `next_prefix` holds the next generation's keys (and the agreement,
// under "members"). Aborted, saying why, where this rank is not among those agreed on (it must end); another
// status where the store fails.
Status agree_on_survivors(KeyValueStore& store, const Generation& failed, const std::string& next_prefix,
                          double lost_after_seconds, SurvivorsAgreed* out);

// The bitwise AND of every member's `bits`, the same on all of them: true where every member's were in it;
// false where one's never came within `bound_seconds` or its process went (each then holds the same,
// partial AND). `round` names this call's keys (the n-th agreement of `generation`).
// Whether every member of `next` (given as ranks of `failed`, the generation they agreed in) but this one
// still has its process: none gone, Status::OK; one gone, PeersFailed naming it. For waits among the members
// that only they can end (their connections forming), which a member lost meanwhile would hold to their bound.
Status members_still_there(KeyValueStore& store, const Generation& failed, const std::vector<int>& members);

bool agree_and_through_store(KeyValueStore& store, const Generation& generation, int round, double bound_seconds,
                             int* bits);

}  // namespace kolo
