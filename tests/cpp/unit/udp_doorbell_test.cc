// kolo's doorbell over UDP (comm/socket/udp_doorbell.h): which one address a rank's socket binds (the
// loopback where every peer is on its host, else the address peers on other hosts reach, on the interfaces
// MPI's traffic is pinned to), and what wakes a sleep: a ring from a peer this rank told it sleeps, never a
// ring for a wait that has ended, no ring where the peer was not told, and nothing from outside the job.
#include <gtest/gtest.h>
#include <arpa/inet.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>

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

UdpDoorbell::Interfaces host(const char* name, std::vector<std::pair<const char*, const char*>> addresses) {
  UdpDoorbell::Interfaces a;
  std::strncpy(a.host, name, sizeof a.host - 1);
  for (const auto& [address, mask] : addresses) {
    a.addresses[a.count] = ip(address);
    a.masks[a.count] = ip(mask);
    ++a.count;
  }
  return a;
}

constexpr UdpDoorbell::Secret kSecret{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};

TEST(UdpDoorbell, BindsTheLoopbackWhereEveryPeerIsOnThisHost) {
  const auto a = host("a", {{"192.168.1.5", "255.255.255.0"}});
  EXPECT_EQ(doorbell_bind_address({a, a, a}, 1), htonl(INADDR_LOOPBACK));
}

TEST(UdpDoorbell, BindsTheAddressInTheSubnetItSharesWithTheMostPeersOnOtherHosts) {
  const auto a = host("a", {{"192.168.1.5", "255.255.255.0"}, {"10.231.7.1", "255.255.255.0"}});
  const auto b = host("b", {{"172.17.0.2", "255.255.0.0"}, {"10.231.7.2", "255.255.255.0"}});
  const auto c = host("c", {{"10.231.7.3", "255.255.255.0"}});
  const auto d = host("d", {{"192.168.1.9", "255.255.255.0"}});
  EXPECT_EQ(doorbell_bind_address({a, a, b, c, d}, 0), ip("10.231.7.1"));
  EXPECT_EQ(doorbell_bind_address({a, d}, 0), ip("192.168.1.5"));
  EXPECT_EQ(doorbell_bind_address({a, b}, 1), ip("10.231.7.2"));
}

TEST(UdpDoorbell, OnARoutedNetworkBindsTheAddressRoutingSendsFrom) {
  // No subnet in common: the kernel's choice of source towards the peer (here the loopback's).
  const auto a = host("a", {{"10.231.7.1", "255.255.255.255"}});
  const auto b = host("b", {{"127.0.0.2", "255.255.255.255"}});
  EXPECT_EQ(doorbell_bind_address({a, b}, 0), ip("127.0.0.1"));
}

TEST(UdpDoorbell, ListsOnlyTheInterfacesMpisTrafficIsPinnedTo) {
  const UdpDoorbell::Interfaces all = UdpDoorbell::interfaces("");
  EXPECT_EQ(UdpDoorbell::interfaces("kolo-no-such-interface").count, 0u);
  EXPECT_EQ(UdpDoorbell::interfaces("lo").count, 0u);  // the loopback is never listed
  if (all.count == 0) GTEST_SKIP() << "this host has no IPv4 interface but the loopback";
  char subnet[64];
  in_addr a{all.addresses[0]};
  std::snprintf(subnet, sizeof subnet, "kolo-no-such-interface,%s/32", inet_ntoa(a));
  const UdpDoorbell::Interfaces one = UdpDoorbell::interfaces(subnet);
  ASSERT_EQ(one.count, 1u);
  EXPECT_EQ(one.addresses[0], all.addresses[0]);
}

TEST(UdpDoorbell, BindsOneAddressNeverEveryInterface) {
  std::unique_ptr<UdpDoorbell> bell;
  ASSERT_TRUE(UdpDoorbell::open(htonl(INADDR_LOOPBACK), kSecret, &bell).ok());
  ASSERT_GT(bell->address().port, 0u);
  EXPECT_EQ(bell->address().address, htonl(INADDR_LOOPBACK));
  const UdpDoorbell::Address none{ip("10.231.7.3"), 0};
  bell->set_peers({bell->address(), UdpDoorbell::Address{ip("10.231.7.2"), 6001}, none}, 0);
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
    ASSERT_TRUE(UdpDoorbell::open(htonl(INADDR_LOOPBACK), kSecret, &bell[0]).ok());
    ASSERT_TRUE(UdpDoorbell::open(htonl(INADDR_LOOPBACK), kSecret, &bell[1]).ok());
    const std::vector<UdpDoorbell::Address> all{bell[0]->address(), bell[1]->address()};
    bell[0]->set_peers(all, 0);
    bell[1]->set_peers(all, 1);
  }
  // Long enough that true can only mean a ring; short enough for a test that expects none.
  static constexpr microseconds kLong{5000000}, kShort{20000};
  std::unique_ptr<UdpDoorbell> bell[2];
};

// A datagram shaped as a doorbell's, from a socket of no rank: `secret` is what its sender guessed.
void ring_from_outside(const UdpDoorbell& to, int32_t kind, int32_t as_rank, const UdpDoorbell::Secret& secret) {
  struct {
    uint32_t magic = 0x4b4f4c42;
    int32_t kind;
    int32_t rank;
    uint8_t secret[16];
  } d;
  d.kind = kind;
  d.rank = as_rank;
  std::memcpy(d.secret, secret.data(), sizeof d.secret);
  const int fd = socket(AF_INET, SOCK_DGRAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in at{};
  at.sin_family = AF_INET;
  at.sin_addr.s_addr = to.address().address;
  at.sin_port = htons(static_cast<uint16_t>(to.address().port));
  ASSERT_EQ(sendto(fd, &d, sizeof d, 0, reinterpret_cast<const sockaddr*>(&at), sizeof at),
            static_cast<ssize_t>(sizeof d));
  close(fd);
}

TEST_F(UdpDoorbellTwoRanks, ARingFromOutsideTheJobIsIgnored) {
  UdpDoorbell::Secret guess{};
  ring_from_outside(*bell[0], 1, 1, guess);  // a ring that names rank 1, without the secret
  EXPECT_FALSE(bell[0]->sleep(kShort));
  EXPECT_EQ(bell[0]->dropped(), 1u);
  // Nor can a stranger make a rank ring another: a note "rank 0 sleeps" without the secret is dropped.
  ring_from_outside(*bell[1], 2, 0, guess);
  bell[1]->ring_if_asleep(0);
  EXPECT_FALSE(bell[0]->sleep(kShort));
  EXPECT_EQ(bell[1]->dropped(), 1u);
  // Another job's ranks have another secret: their ring is a stranger's too.
  UdpDoorbell::Secret theirs{};
  ASSERT_TRUE(UdpDoorbell::make_secret(&theirs).ok());
  bell[0]->sleeping_on(1);
  ring_from_outside(*bell[0], 1, 1, theirs);
  EXPECT_FALSE(bell[0]->sleep(kShort));
  EXPECT_EQ(bell[0]->dropped(), 2u);
  // The job's own ring still wakes it.
  bell[0]->sleeping_on(1);
  bell[1]->ring_if_asleep(0);
  EXPECT_TRUE(bell[0]->sleep(kLong));
}

TEST(UdpDoorbell, EachJobGetsItsOwnSecret) {
  UdpDoorbell::Secret a{}, b{};
  ASSERT_TRUE(UdpDoorbell::make_secret(&a).ok());
  ASSERT_TRUE(UdpDoorbell::make_secret(&b).ok());
  EXPECT_NE(a, b);
  EXPECT_NE(a, UdpDoorbell::Secret{});
}

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
