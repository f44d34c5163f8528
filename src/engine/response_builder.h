// Turns the requests every rank made for one name into the response all ranks will execute: the
// agreed op, or an error naming the field and the ranks that disagree.
#pragma once

#include <vector>

#include "common/ranks.h"
#include "engine/message.h"

namespace kolo {

// `submitted`: the requests for one name, in rank order, from every rank that has not joined;
// `joined`: the ranks that have (they take part with the op's identity, or no rows). `names`: how its errors
// name the ranks.
Response build_response(const std::vector<Request>& submitted, const std::vector<int>& joined = {},
                        const RankNames& names = RankNames());

// An error response: every rank that submitted `name` fails it with `message` (a process set's op names the set).
Response error_response(const RankNames& names, const std::string& name, OpKind kind, StatusCode code,
                        std::string message);

}  // namespace kolo
