// Every tag kolo's point-to-point messages use, in one place: messages match by (group, peer, tag), and
// two kinds of traffic that may be in flight on one group at once must never share a tag.
#pragma once

namespace kolo {
namespace tags {

// On an instance's negotiation group.
constexpr int kNegotiation = 1;
// On its data group.
constexpr int kFlatAllreduce = 2;
constexpr int kAdasum = 0x4164;  // "Ad"
// On its host's group (the hierarchical allreduce's stages inside the host).
constexpr int kHostRing = 3;
// On its group across hosts (the hierarchical allreduce's crossing).
constexpr int kCrossing = 0;
// The group collectives' own implementations (group_collectives.cc), on whichever group runs them: each
// runs on one thread of the group's at a time, never beside the traffic above on the same group.
constexpr int kGroupAllreduce = 0x101;
constexpr int kGroupAllgather = 0x102;
constexpr int kGroupBroadcast = 0x103;
constexpr int kGroupAlltoall = 0x104;
constexpr int kGroupReduceScatter = 0x105;
constexpr int kGroupGather = 0x106;

}  // namespace tags
}  // namespace kolo
