#include "comm/socket/udp_doorbell.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <poll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <sstream>

#include "comm/socket/route.h"
#include "common/clock.h"

namespace kolo {
namespace {

constexpr uint32_t kMagic = 0x4b4f4c42;  // "KOLB"

sockaddr_in nowhere() {
  sockaddr_in s{};
  s.sin_family = AF_INET;
  return s;
}

// Whether an interface `name` with `address` is among `only` (names, or subnets as "10.1.2.0/24").
bool named(const std::string& only, const char* name, uint32_t address) {
  if (only.empty()) return true;
  std::stringstream list(only);
  std::string item;
  while (std::getline(list, item, ',')) {
    const size_t slash = item.find('/');
    if (slash == std::string::npos) {
      if (item == name) return true;
      continue;
    }
    in_addr net{};
    const int bits = std::atoi(item.c_str() + slash + 1);
    if (inet_pton(AF_INET, item.substr(0, slash).c_str(), &net) != 1 || bits < 0 || bits > 32) continue;
    const uint32_t mask = bits == 0 ? 0 : htonl(~uint32_t{0} << (32 - bits));
    if ((address & mask) == (net.s_addr & mask)) return true;
  }
  return false;
}

}  // namespace

UdpDoorbell::Interfaces UdpDoorbell::interfaces(const std::string& only) {
  Interfaces a;
  ::gethostname(a.host, sizeof a.host - 1);
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return a;
  for (ifaddrs* i = list; i != nullptr && a.count < Interfaces::kMostAddresses; i = i->ifa_next) {
    if (i->ifa_addr == nullptr || i->ifa_netmask == nullptr || i->ifa_addr->sa_family != AF_INET) continue;
    if (!(i->ifa_flags & IFF_UP) || (i->ifa_flags & IFF_LOOPBACK)) continue;
    const uint32_t address = reinterpret_cast<const sockaddr_in*>(i->ifa_addr)->sin_addr.s_addr;
    if (!named(only, i->ifa_name, address)) continue;
    a.addresses[a.count] = address;
    a.masks[a.count] = reinterpret_cast<const sockaddr_in*>(i->ifa_netmask)->sin_addr.s_addr;
    ++a.count;
  }
  freeifaddrs(list);
  return a;
}

uint32_t doorbell_bind_address(const std::vector<UdpDoorbell::Interfaces>& all, int rank) {
  const UdpDoorbell::Interfaces& mine = all[static_cast<size_t>(rank)];
  std::vector<const UdpDoorbell::Interfaces*> away;
  for (const auto& peer : all) {
    if (std::strncmp(peer.host, mine.host, sizeof mine.host) != 0) away.push_back(&peer);
  }
  if (away.empty() || mine.count == 0) return htonl(INADDR_LOOPBACK);
  int best = -1, best_count = 0;
  for (uint32_t m = 0; m < mine.count; ++m) {
    int count = 0;
    for (const auto* peer : away) {
      for (uint32_t p = 0; p < peer->count; ++p) {
        if ((peer->addresses[p] & mine.masks[m]) == (mine.addresses[m] & mine.masks[m])) {
          ++count;
          break;
        }
      }
    }
    if (count > best_count) {
      best = static_cast<int>(m);
      best_count = count;
    }
  }
  if (best >= 0) return mine.addresses[best];
  for (const auto* peer : away) {
    if (peer->count == 0) continue;
    const uint32_t source = source_address_towards(peer->addresses[0]);
    if (source != 0) return source;
  }
  return mine.addresses[0];
}

Status UdpDoorbell::make_secret(Secret* out) {
  size_t got = 0;
  while (got < out->size()) {
    const ssize_t n = ::getrandom(out->data() + got, out->size() - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::Internal(std::string("doorbell secret (getrandom): ") + std::strerror(errno));
    got += static_cast<size_t>(n);
  }
  return Status::OK();
}

Status UdpDoorbell::open(uint32_t address, const Secret& secret, std::unique_ptr<UdpDoorbell>* out) {
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::Internal(std::string("doorbell socket: ") + std::strerror(errno));
  std::unique_ptr<UdpDoorbell> bell(new UdpDoorbell(fd, secret));
  sockaddr_in at = nowhere();
  at.sin_addr.s_addr = address;
  socklen_t length = sizeof at;
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&at), sizeof at) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&at), &length) != 0) {
    char text[INET_ADDRSTRLEN] = "?";
    inet_ntop(AF_INET, &address, text, sizeof text);
    return Status::Internal(std::string("doorbell socket on ") + text + ": " + std::strerror(errno));
  }
  bell->address_.address = address;
  bell->address_.port = ntohs(at.sin_port);
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
    if (peers[r].port == 0) continue;
    routes_[r].sin_addr.s_addr = peers[r].address;
    routes_[r].sin_port = htons(static_cast<uint16_t>(peers[r].port));
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
    // Compared in full, not up to the first difference: how long a check takes says nothing of the secret.
    uint8_t differs = 0;
    for (size_t i = 0; i < sizeof d.secret; ++i) differs |= static_cast<uint8_t>(d.secret[i] ^ secret_[i]);
    if (n != static_cast<ssize_t>(sizeof d) || d.magic != kMagic || differs != 0 || d.rank < 0 ||
        static_cast<size_t>(d.rank) >= asleep_.size()) {
      ++dropped_;
      continue;
    }
    if (d.kind == kRing) rung = true;
    if (d.kind == kAsleep) asleep_[static_cast<size_t>(d.rank)] = 1;
  }
  return rung;
}

void UdpDoorbell::send(int peer, Kind kind) {
  const sockaddr_in to = route(peer);
  if (to.sin_port == 0) return;
  Datagram d{kMagic, kind, rank_, {}};
  std::memcpy(d.secret, secret_.data(), sizeof d.secret);
  // Dropped where it cannot go at once (a full buffer, no route): the sleeper's nap ends anyway.
  (void)::sendto(fd_, &d, sizeof d, MSG_DONTWAIT | MSG_NOSIGNAL, reinterpret_cast<const sockaddr*>(&to), sizeof to);
}

}  // namespace kolo
