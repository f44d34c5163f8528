#include "comm/device/surviving_comms.h"

#include <algorithm>
#include <string>
#include <vector>

#include "common/logging.h"

namespace kolo {
namespace {

using DeviceGroup = DeviceContext::Group;
constexpr int kLocalRankKept = 1 << DeviceContext::kGroups;  // a bit after the groups'

}  // namespace

std::vector<int> lost_members(const std::vector<int>& members, const std::vector<int>& survivors) {
  std::vector<int> lost;
  for (size_t i = 0; i < members.size(); ++i) {
    if (std::find(survivors.begin(), survivors.end(), members[i]) == survivors.end()) lost.push_back(static_cast<int>(i));
  }
  return lost;
}

SurvivingComms shrink_device_comms(DeviceContext* old, const Survivors& survivors, const Status& why) {
  SurvivingComms out;
  // What this rank can offer: each group's communicator made, and whether its place on its host stays
  // (a lost rank below it on the host moves it down, into another group across hosts).
  std::vector<int> lost[DeviceContext::kGroups];
  int mine = 0;
  if (old != nullptr) {
    for (int g = 0; g < DeviceContext::kGroups; ++g) {
      DeviceComm* comm = old->made(static_cast<DeviceGroup>(g));
      const bool made = comm != nullptr;
      // Offered only unbroken: NCCL refuses to shrink a communicator that met an error (2.28.9: "remote
      // process exited"), and a survivor refused at once would leave the others waiting in theirs.
      if (made && comm->async_error().ok()) mine |= 1 << g;
      // This host's lost ranks tell whether this rank keeps its place, made or not.
      if (made || static_cast<DeviceGroup>(g) == DeviceGroup::kLocal) {
        lost[g] = lost_members(old->members(static_cast<DeviceGroup>(g)), survivors.ranks);
      }
    }
    const int local_rank = old->group(DeviceGroup::kLocal).rank();
    const std::vector<int>& gone = lost[static_cast<int>(DeviceGroup::kLocal)];
    if (std::none_of(gone.begin(), gone.end(), [&](int r) { return r < local_rank; })) mine |= kLocalRankKept;
  }
  // Agreed, not all-reduced: a rank lost during this recovery fails a plain allreduce on some survivors
  // only, and the others wait in it for them forever. (A failure here is the next recovery's to handle.)
  int agreed = mine;
  if (!survivors.agree_and(&agreed)) agreed = 0;
  if (!(agreed & kLocalRankKept)) agreed &= ~(1 << static_cast<int>(DeviceGroup::kCross));
  int shrunk = 0;
  for (int g = 0; g < DeviceContext::kGroups && old != nullptr; ++g) {
    if (!(agreed & (1 << g))) continue;
    Status s = old->made(static_cast<DeviceGroup>(g))->shrink(lost[g], &out.group[g], survivors.progress);
    if (s.ok()) {
      shrunk |= 1 << g;
    } else {
      out.group[g].reset();
      KOLO_LOG(kWarning, "the " << old->library() << " communicator of " << DeviceContext::describe(static_cast<DeviceGroup>(g))
                                << " could not be shrunk: " << s.message());
    }
  }
  // A group is carried only where every survivor has its shrunk communicator: one rank making it anew
  // while another uses the shrunk one would wait for each other.
  int everywhere = shrunk;
  if (!survivors.agree_and(&everywhere)) everywhere = 0;
  for (int g = 0; g < DeviceContext::kGroups; ++g) {
    if (!out.group[g]) continue;
    if (everywhere & (1 << g)) {
      ++out.shrunk;
    } else {
      out.group[g]->abort();
      out.group[g].reset();
    }
  }
  if (old != nullptr) old->abort_comms(why);
  return out;
}

}  // namespace kolo
