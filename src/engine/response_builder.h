// Turns the requests every rank made for one name into the response all ranks will execute: the
// agreed op, or an error naming the field and the ranks that disagree.
#pragma once

#include <vector>

#include "engine/message.h"

namespace kolo {

// `by_rank[r]` is rank r's request; all have the same name.
Response build_response(const std::vector<Request>& by_rank);

// An error response: every rank that submitted `name` fails it with `message`.
Response error_response(const std::string& name, OpKind kind, StatusCode code, std::string message);

}  // namespace kolo
