// kolo's doorbell over UDP (comm/socket/udp_doorbell.h): where a note or ring goes (a peer on this host
// on the loopback, one on another host at its address in a shared subnet), and what wakes a sleep: a
// ring from a peer this rank told it sleeps, never a ring for a wait that has ended, and no ring where
// the peer was not told.
#include <gtest/gtest.h>
#include <arpa/inet.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "comm/socket/udp_doorbell.h"

namespace kolo {
namespace {

using std::chrono::microseconds;

uint32_t ip(const char* text) {
  in_addr a{};
  EXPECT_EQ(inet_pton(AF_INET, text, &a), 1) << text;
  return a.s_addr;
}

UdpDoorbell::Address host(const char* name, std::vector<std::pair<const char*, const char*>> addresses,
                          uint32_t port = 5000) {
  UdpDoorbell::Address a;
  a.port = port;
  std::strncpy(a.host, name, sizeof a.host - 1);
  for (const auto& [address, mask] : addresses) {
    a.addresses[a.count] = ip(address);
    a.masks[a.count] = ip(mask);
    ++a.count;
  }
  return a;
}

TEST(UdpDoorbell, APeerOnAnotherHostIsReachedInTheSubnetBothShare) {
  const auto mine = host("a", {{"192.168.1.5", "255.255.255.0"}, {"10.231.7.1", "255.255.255.0"}});
  const auto peer = host("b", {{"172.17.0.2", "255.255.0.0"}, {"10.231.7.2", "255.255.255.0"}});
  EXPECT_EQ(reachable_address(mine, peer), 1);
  // No subnet in common: its first address, which routing may still reach.
  EXPECT_EQ(reachable_address(mine, host("c", {{"172.18.0.9", "255.255.0.0"}})), 0);
  EXPECT_EQ(reachable_address(mine, host("d", {})), -1);
}

TEST(UdpDoorbell, RoutesGoToTheLoopbackOnThisHostAndNowhereForAPeerWithoutADoorbell) {
  std::unique_ptr<UdpDoorbell> bell;
  ASSERT_TRUE(UdpDoorbell::open(&bell).ok());
  ASSERT_GT(bell->address().port, 0u);
  auto other = host("kolo-test-other-host", {{"10.231.7.2", "255.255.255.0"}}, 6001);
  auto none = host("kolo-test-other-host", {{"10.231.7.3", "255.255.255.0"}}, 0);
  bell->set_peers({bell->address(), other, none}, 0);
  EXPECT_EQ(bell->route(0).sin_addr.s_addr, htonl(INADDR_LOOPBACK));
  EXPECT_EQ(ntohs(bell->route(0).sin_port), bell->address().port);
  EXPECT_EQ(bell->route(1).sin_addr.s_addr, ip("10.231.7.2"));
  EXPECT_EQ(ntohs(bell->route(1).sin_port), 6001);
  EXPECT_EQ(bell->route(2).sin_port, 0);
  EXPECT_EQ(bell->route(3).sin_port, 0);  // not a rank
}

class UdpDoorbellTwoRanks : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(UdpDoorbell::open(&bell[0]).ok());
    ASSERT_TRUE(UdpDoorbell::open(&bell[1]).ok());
    const std::vector<UdpDoorbell::Address> all{bell[0]->address(), bell[1]->address()};
    bell[0]->set_peers(all, 0);
    bell[1]->set_peers(all, 1);
  }
  // Long enough that true can only mean a ring; short enough for a test that expects none.
  static constexpr microseconds kLong{5000000}, kShort{20000};
  std::unique_ptr<UdpDoorbell> bell[2];
};

TEST_F(UdpDoorbellTwoRanks, APeerThatSleepsWaitingIsRungAndOnlyOnce) {
  bell[0]->sleeping_on(1);
  bell[1]->ring_if_asleep(0);
  EXPECT_TRUE(bell[0]->sleep(kLong));
  // The note is spent: the next send rings no one.
  bell[1]->ring_if_asleep(0);
  EXPECT_FALSE(bell[0]->sleep(kShort));
}

TEST_F(UdpDoorbellTwoRanks, APeerThatSaidNothingIsNotRung) {
  bell[1]->ring_if_asleep(0);
  EXPECT_FALSE(bell[0]->sleep(kShort));
  // A note to another rank is not one to this one.
  bell[0]->sleeping_on(0);
  bell[1]->ring_if_asleep(0);
  EXPECT_FALSE(bell[0]->sleep(kShort));
}

TEST_F(UdpDoorbellTwoRanks, ARingForAWaitThatEndedDoesNotEndTheNextWaitsSleep) {
  bell[0]->sleeping_on(1);
  bell[1]->ring_if_asleep(0);  // the wait ended without sleeping: the ring is left unread
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  bell[0]->sleeping_on(1);
  EXPECT_FALSE(bell[0]->sleep(kShort));
  bell[1]->ring_if_asleep(0);  // this wait's note
  EXPECT_TRUE(bell[0]->sleep(kLong));
}

TEST_F(UdpDoorbellTwoRanks, ASleeperIsWokenWhileItSleeps) {
  bell[0]->sleeping_on(1);
  std::thread peer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    bell[1]->ring_if_asleep(0);
  });
  EXPECT_TRUE(bell[0]->sleep(kLong));
  peer.join();
}

}  // namespace
}  // namespace kolo
