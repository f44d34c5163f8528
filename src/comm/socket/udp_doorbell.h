// kolo's PeerBell over UDP: each rank's socket, bound to every interface, that it sleeps on (ppoll)
// when a wait for a peer's message naps. A rank going to sleep sends the peer it waits for a note; that
// peer, once it has sent, rings the sleeper where it finds the note. Sending a datagram costs a few
// microseconds here (the whole path to the receiver's socket runs in the sender's call), so a rank
// rings only a peer that sleeps, never one still spinning for its message. UDP because both are only
// hints: nothing to connect, nothing to retransmit, and a lost one costs a nap.
#pragma once

#include <netinet/in.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "comm/peer_bell.h"
#include "kolo/status.h"

namespace kolo {

class UdpDoorbell : public PeerBell {
 public:
  // Where a rank's doorbell is: its port, its host's name and IPv4 addresses (with their netmasks), in
  // a fixed layout that ranks exchange as bytes. port 0: the rank has none (its socket failed).
  struct Address {
    static constexpr int kMostAddresses = 8;
    static constexpr int kHostBytes = 64;
    uint32_t port = 0;  // host byte order
    uint32_t count = 0;
    uint32_t addresses[kMostAddresses] = {};  // network byte order
    uint32_t masks[kMostAddresses] = {};
    char host[kHostBytes] = {};
  };

  // A socket on an ephemeral port of every interface.
  static Status open(std::unique_ptr<UdpDoorbell>* out);
  ~UdpDoorbell() override;
  UdpDoorbell(const UdpDoorbell&) = delete;
  UdpDoorbell& operator=(const UdpDoorbell&) = delete;

  const Address& address() const { return address_; }
  // Every rank's address, by rank, and this rank's: where each note and ring goes. A peer on this host is
  // reached on the loopback; one on another host at its address in a subnet this host shares (else its
  // first address).
  void set_peers(const std::vector<Address>& peers, int rank);
  // Where a ring to `peer` goes; port 0 where it has nowhere to go.
  sockaddr_in route(int peer) const;

  void sleeping_on(int peer) override;
  bool sleep(std::chrono::microseconds timeout) override;
  void ring_if_asleep(int peer) override;

 private:
  enum Kind : int32_t { kRing = 1, kAsleep = 2 };
  struct Datagram {
    int32_t kind;
    int32_t rank;  // the sender's
  };
  explicit UdpDoorbell(int fd) : fd_(fd) {}
  void send(int peer, Kind kind);
  // Reads every datagram here: notes mark their senders asleep; true where a ring was among them.
  bool take();
  int fd_ = -1;
  int rank_ = -1;
  Address address_;
  std::vector<sockaddr_in> routes_;
  std::vector<char> asleep_;  // by rank: has said it sleeps waiting for this rank
};

// Which of `peer`'s addresses this host reaches: the first in a subnet of one of `mine`, else its first.
// Index into peer.addresses; -1 where it has none.
int reachable_address(const UdpDoorbell::Address& mine, const UdpDoorbell::Address& peer);

}  // namespace kolo
