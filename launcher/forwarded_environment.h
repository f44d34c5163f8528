// Which variables of the launching environment kolorun forwards to every rank: all of them, as
// horovodrun does, but those that describe this host, this login or one process of a running job,
// which would be wrong on another host (docs/running-jobs.md lists them, from here).
#pragma once

#include <string>
#include <vector>

namespace kolo {
namespace launcher {

struct HostSpecificVariables {
  std::vector<std::string> patterns;  // a name, or a prefix ending in '*', or a suffix starting with '*'
  const char* why;
};

// The variables kept from the ranks, in groups with the reason for each.
const std::vector<HostSpecificVariables>& host_specific_variables();

// Whether `name` (set where kolorun runs) goes to every rank: not host-specific, and a name that
// mpirun's -x can carry (letters, digits, '_'; exported shell functions' names cannot).
bool forwarded_to_ranks(const std::string& name);

}  // namespace launcher
}  // namespace kolo
