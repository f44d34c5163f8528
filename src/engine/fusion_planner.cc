#include "engine/fusion_planner.h"

#include <map>
#include <tuple>

namespace kolo {

std::vector<FusionGroup> plan_fusion(const std::vector<Response>& responses, int64_t threshold_bytes) {
  using Key = std::tuple<DataType, DeviceType, ReduceOp, double, double, Compression>;
  std::vector<FusionGroup> groups;
  std::map<Key, size_t> open;  // the group still taking members, per key
  for (size_t i = 0; i < responses.size(); ++i) {
    const Response& r = responses[i];
    const int64_t bytes = r.size_bytes();
    const bool fusable = r.ok() && r.kind == OpKind::kAllreduce && threshold_bytes > 0 &&
                         bytes <= threshold_bytes;
    if (!fusable) {
      groups.push_back(FusionGroup{{i}, r.ok() ? bytes : 0});
      continue;
    }
    const Key key{r.dtype, r.device, r.reduce_op, r.prescale, r.postscale, r.compression};
    auto it = open.find(key);
    if (it != open.end() && groups[it->second].bytes + bytes <= threshold_bytes) {
      groups[it->second].members.push_back(i);
      groups[it->second].bytes += bytes;
      continue;
    }
    open[key] = groups.size();
    groups.push_back(FusionGroup{{i}, bytes});
  }
  return groups;
}

}  // namespace kolo
