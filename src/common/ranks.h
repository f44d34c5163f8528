// Compact rank lists for messages: {0,1,2,5} -> "0-2,5", so a report on 512 ranks stays one line.
#pragma once

#include <string>
#include <vector>

namespace kolo {

std::string format_ranks(std::vector<int> ranks);
// "rank 3" or "ranks 0-2,5".
std::string ranks_phrase(const std::vector<int>& ranks);

}  // namespace kolo
