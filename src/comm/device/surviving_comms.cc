#include "comm/device/surviving_comms.h"

#include <algorithm>
#include <string>
#include <vector>

#include "comm/mpi/mpi_fault.h"
#include "common/logging.h"

namespace kolo {
namespace {

using Group = DeviceContext::Group;
constexpr int kLocalRankKept = 1 << DeviceContext::kGroups;  // a bit after the groups'

}  // namespace

std::vector<int> lost_members(MPI_Comm comm, MPI_Comm survivors) {
  MPI_Group from = MPI_GROUP_NULL, to = MPI_GROUP_NULL;
  MPI_Comm_group(comm, &from);
  MPI_Comm_group(survivors, &to);
  int n = 0;
  MPI_Group_size(from, &n);
  std::vector<int> ranks(static_cast<size_t>(n)), there(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) ranks[static_cast<size_t>(i)] = i;
  MPI_Group_translate_ranks(from, n, ranks.data(), to, there.data());
  MPI_Group_free(&from);
  MPI_Group_free(&to);
  std::vector<int> lost;
  for (int i = 0; i < n; ++i) {
    if (there[static_cast<size_t>(i)] == MPI_UNDEFINED) lost.push_back(i);
  }
  return lost;
}

SurvivingComms shrink_device_comms(DeviceContext* old, MPI_Comm survivors, const Status& why) {
  SurvivingComms out;
  // What this rank can offer: each group's communicator made, and whether its place on its host stays
  // (a lost rank below it on the host moves it down, into another group across hosts).
  std::vector<int> lost[DeviceContext::kGroups];
  int mine = 0;
  if (old != nullptr) {
    for (int g = 0; g < DeviceContext::kGroups; ++g) {
      DeviceComm* comm = old->made(static_cast<Group>(g));
      const bool made = comm != nullptr;
      // Offered only unbroken: NCCL refuses to shrink a communicator that met an error (2.28.9: "remote
      // process exited"), and a survivor refused at once would leave the others waiting in theirs.
      if (made && comm->async_error().ok()) mine |= 1 << g;
      // This host's lost ranks tell whether this rank keeps its place, made or not.
      if (made || static_cast<Group>(g) == Group::kLocal) {
        lost[g] = lost_members(old->mpi_comm(static_cast<Group>(g)), survivors);
      }
    }
    int local_rank = 0;
    MPI_Comm_rank(old->mpi_comm(Group::kLocal), &local_rank);
    const std::vector<int>& gone = lost[static_cast<int>(Group::kLocal)];
    if (std::none_of(gone.begin(), gone.end(), [&](int r) { return r < local_rank; })) mine |= kLocalRankKept;
  }
  // Agreed, not all-reduced: a rank lost during this recovery fails a plain allreduce on some survivors
  // only, and the others wait in it for them forever. (A failure here is the next recovery's to handle.)
  int agreed = mine;
  if (!agree_and(survivors, &agreed)) agreed = 0;
  if (!(agreed & kLocalRankKept)) agreed &= ~(1 << static_cast<int>(Group::kCross));
  int shrunk = 0;
  for (int g = 0; g < DeviceContext::kGroups && old != nullptr; ++g) {
    if (!(agreed & (1 << g))) continue;
    Status s = old->made(static_cast<Group>(g))->shrink(lost[g], &out.group[g],
                                                        [survivors] { drive_mpi_progress(survivors); });
    if (s.ok()) {
      shrunk |= 1 << g;
    } else {
      out.group[g].reset();
      KOLO_LOG(kWarning, "the " << old->library() << " communicator of " << DeviceContext::describe(static_cast<Group>(g))
                                << " could not be shrunk: " << s.message());
    }
  }
  // A group is carried only where every survivor has its shrunk communicator: one rank making it anew
  // while another uses the shrunk one would wait for each other.
  int everywhere = shrunk;
  if (!agree_and(survivors, &everywhere)) everywhere = 0;
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
