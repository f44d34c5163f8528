// kolo's PeerBell over UDP: each rank's socket that it sleeps on (ppoll) when a wait for a peer's message
// naps. A rank going to sleep sends the peer it waits for a note; that peer, once it has sent, rings the
// sleeper where it finds the note. Sending a datagram costs a few microseconds here (the whole path to
// the receiver's socket runs in the sender's call), so a rank rings only a peer that sleeps, never one
// still spinning for its message. UDP because both are only hints: nothing to connect, nothing to
// retransmit, and a lost one costs a nap.
//
// The socket is bound to one address, never to every interface: the loopback where every peer is on
// this host, else this host's address that the peers on other hosts reach (in a subnet they share, on the
// interfaces MPI's TCP traffic is limited to where it is). Every datagram carries the job's secret (random,
// from its first rank, made anew for each doorbell), and one without it is dropped unread: a stranger can
// neither wake a rank nor make it ring another. docs/faults-and-security.md lists it among kolo's sockets.
#pragma once

#include <netinet/in.h>

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "comm/peer_bell.h"
#include "kolo/status.h"

namespace kolo {

class UdpDoorbell : public PeerBell {
 public:
  // A rank's host: its name and IPv4 interfaces (up, loopback left out), with their netmasks, in a fixed
  // layout that ranks exchange as bytes.
  struct Interfaces {
    static constexpr int kMostAddresses = 8;
    static constexpr int kHostBytes = 64;
    uint32_t count = 0;
    uint32_t addresses[kMostAddresses] = {};  // network byte order
    uint32_t masks[kMostAddresses] = {};
    char host[kHostBytes] = {};
  };
  // Where a rank's socket listens. port 0: the rank has none (its socket failed).
  struct Address {
    uint32_t address = 0;  // network byte order
    uint32_t port = 0;     // host byte order
  };
  using Secret = std::array<uint8_t, 16>;

  // This host's interfaces; where `only` is not empty (Open MPI's btl_tcp_if_include: interface names or
  // subnets, comma separated), only those it names.
  static Interfaces interfaces(const std::string& only);
  // A new secret for a job's doorbells (the first rank's, sent to the others).
  static Status make_secret(Secret* out);
  // A socket on an ephemeral port of `address` (network byte order).
  static Status open(uint32_t address, const Secret& secret, std::unique_ptr<UdpDoorbell>* out);
  ~UdpDoorbell() override;
  UdpDoorbell(const UdpDoorbell&) = delete;
  UdpDoorbell& operator=(const UdpDoorbell&) = delete;

  const Address& address() const { return address_; }
  // Every rank's socket, by rank, and this rank's: where each note and ring goes.
  void set_peers(const std::vector<Address>& peers, int rank);
  // Where a ring to `peer` goes; port 0 where it has nowhere to go.
  sockaddr_in route(int peer) const;
  // Datagrams dropped so far for want of the job's secret (or of a datagram's shape).
  uint64_t dropped() const { return dropped_; }

  void sleeping_on(int peer) override;
  bool sleep(std::chrono::microseconds timeout) override;
  void ring_if_asleep(int peer) override;

 private:
  enum Kind : int32_t { kRing = 1, kAsleep = 2 };
  struct Datagram {
    uint32_t magic;
    int32_t kind;
    int32_t rank;  // the sender's
    uint8_t secret[16];
  };
  UdpDoorbell(int fd, const Secret& secret) : fd_(fd), secret_(secret) {}
  void send(int peer, Kind kind);
  // Reads every datagram here: notes mark their senders asleep; true where a ring was among them. Drops
  // any without the secret.
  bool take();
  int fd_ = -1;
  int rank_ = -1;
  Secret secret_;
  Address address_;
  uint64_t dropped_ = 0;
  std::vector<sockaddr_in> routes_;
  std::vector<char> asleep_;  // by rank: has said it sleeps waiting for this rank
};

// The address rank `rank`'s socket binds (network byte order), from every rank's interfaces: the loopback
// where every rank is on its host; else its address in the subnet shared with the most ranks on other hosts,
// or (no subnet in common: a routed network) the one this host's routing sends from to the first of them.
uint32_t doorbell_bind_address(const std::vector<UdpDoorbell::Interfaces>& all, int rank);

}  // namespace kolo
