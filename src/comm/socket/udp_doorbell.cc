#include "comm/socket/udp_doorbell.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

#include "common/clock.h"

namespace kolo {
namespace {

// This host's IPv4 interfaces that are up, loopback left out (a peer on this host is rung there anyway).
void add_interfaces(UdpDoorbell::Address* a) {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return;
  for (ifaddrs* i = list; i != nullptr && a->count < UdpDoorbell::Address::kMostAddresses; i = i->ifa_next) {
    if (i->ifa_addr == nullptr || i->ifa_netmask == nullptr || i->ifa_addr->sa_family != AF_INET) continue;
    if (!(i->ifa_flags & IFF_UP) || (i->ifa_flags & IFF_LOOPBACK)) continue;
    a->addresses[a->count] = reinterpret_cast<const sockaddr_in*>(i->ifa_addr)->sin_addr.s_addr;
    a->masks[a->count] = reinterpret_cast<const sockaddr_in*>(i->ifa_netmask)->sin_addr.s_addr;
    ++a->count;
  }
  freeifaddrs(list);
}

sockaddr_in nowhere() {
  sockaddr_in s{};
  s.sin_family = AF_INET;
  return s;
}

}  // namespace

int reachable_address(const UdpDoorbell::Address& mine, const UdpDoorbell::Address& peer) {
  if (peer.count == 0) return -1;
  for (uint32_t m = 0; m < mine.count; ++m) {
    for (uint32_t p = 0; p < peer.count; ++p) {
      if ((peer.addresses[p] & mine.masks[m]) == (mine.addresses[m] & mine.masks[m])) return static_cast<int>(p);
    }
  }
  return 0;
}

Status UdpDoorbell::open(std::unique_ptr<UdpDoorbell>* out) {
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::Internal(std::string("doorbell socket: ") + std::strerror(errno));
  std::unique_ptr<UdpDoorbell> bell(new UdpDoorbell(fd));
  sockaddr_in any = nowhere();
  any.sin_addr.s_addr = htonl(INADDR_ANY);
  socklen_t length = sizeof any;
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&any), sizeof any) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&any), &length) != 0) {
    return Status::Internal(std::string("doorbell socket's port: ") + std::strerror(errno));
  }
  bell->address_.port = ntohs(any.sin_port);
  ::gethostname(bell->address_.host, sizeof bell->address_.host - 1);
  add_interfaces(&bell->address_);
  *out = std::move(bell);
  return Status::OK();
}

UdpDoorbell::~UdpDoorbell() {
  if (fd_ >= 0) ::close(fd_);
}

void UdpDoorbell::set_peers(const std::vector<Address>& peers, int rank) {
  rank_ = rank;
  asleep_.assign(peers.size(), 0);
  routes_.assign(peers.size(), nowhere());
  for (size_t r = 0; r < peers.size(); ++r) {
    const Address& p = peers[r];
    const bool here = std::strncmp(p.host, address_.host, sizeof p.host) == 0;
    const int i = here ? -1 : reachable_address(address_, p);
    if (p.port == 0 || (!here && i < 0)) continue;
    routes_[r].sin_addr.s_addr = here ? htonl(INADDR_LOOPBACK) : p.addresses[i];
    routes_[r].sin_port = htons(static_cast<uint16_t>(p.port));
  }
}

sockaddr_in UdpDoorbell::route(int peer) const {
  if (peer < 0 || static_cast<size_t>(peer) >= routes_.size()) return nowhere();
  return routes_[static_cast<size_t>(peer)];
}

void UdpDoorbell::sleeping_on(int peer) {
  take();
  send(peer, kAsleep);
}

bool UdpDoorbell::sleep(std::chrono::microseconds timeout) {
  pollfd p{fd_, POLLIN, 0};
  const timespec t = to_timespec(timeout);
  if (::ppoll(&p, 1, &t, nullptr) <= 0) return false;
  return take();
}

void UdpDoorbell::ring_if_asleep(int peer) {
  // A ring read here is for this step, whose message is already here (the peer rang because this
  // rank's message had reached it): nothing sleeps for it.
  take();
  if (peer < 0 || static_cast<size_t>(peer) >= asleep_.size() || !asleep_[static_cast<size_t>(peer)]) return;
  asleep_[static_cast<size_t>(peer)] = 0;
  send(peer, kRing);
}

bool UdpDoorbell::take() {
  bool rung = false;
  Datagram d;
  ssize_t n;
  while ((n = ::recv(fd_, &d, sizeof d, MSG_DONTWAIT)) >= 0) {
    if (n != static_cast<ssize_t>(sizeof d)) continue;
    if (d.kind == kRing) rung = true;
    if (d.kind == kAsleep && d.rank >= 0 && static_cast<size_t>(d.rank) < asleep_.size()) {
      asleep_[static_cast<size_t>(d.rank)] = 1;
    }
  }
  return rung;
}

void UdpDoorbell::send(int peer, Kind kind) {
  const sockaddr_in to = route(peer);
  if (to.sin_port == 0) return;
  const Datagram d{kind, rank_};
  // Dropped where it cannot go at once (a full buffer, no route): the sleeper's nap ends anyway.
  (void)::sendto(fd_, &d, sizeof d, MSG_DONTWAIT | MSG_NOSIGNAL, reinterpret_cast<const sockaddr*>(&to), sizeof to);
}

}  // namespace kolo
