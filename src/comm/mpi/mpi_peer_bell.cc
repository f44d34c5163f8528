#include "comm/mpi/mpi_peer_bell.h"

#include <cstdlib>
#include <vector>

#include "comm/mpi/mpi_status.h"
#include "comm/socket/udp_doorbell.h"
#include "common/logging.h"

namespace kolo {
namespace {

Status allgather_bytes(MPI_Comm comm, const void* mine, int bytes, void* all, const char* what) {
  MPI_Request req = MPI_REQUEST_NULL;
  KOLO_MPI_RETURN_IF_ERROR(MPI_Iallgather(mine, bytes, MPI_BYTE, all, bytes, MPI_BYTE, comm, &req), what);
  return mpi_wait(&req, what);
}

}  // namespace

Status open_peer_bell(MPI_Comm comm, std::unique_ptr<PeerBell>* out) {
  out->reset();
  int size = 0, rank = 0;
  MPI_Comm_size(comm, &size);
  MPI_Comm_rank(comm, &rank);
  // Where MPI's TCP traffic is pinned (kolorun --network-interface), the doorbell is too.
  const char* only = std::getenv("OMPI_MCA_btl_tcp_if_include");
  const UdpDoorbell::Interfaces here = UdpDoorbell::interfaces(only == nullptr ? "" : only);
  std::vector<UdpDoorbell::Interfaces> hosts(static_cast<size_t>(size));
  Status s = allgather_bytes(comm, &here, sizeof here, hosts.data(), "doorbell interfaces MPI_Iallgather");
  if (!s.ok()) return s;
  // The first rank's secret is every rank's (a rank whose random source failed sends zeros, and its
  // peers then drop what it sends: only its doorbell is lost).
  UdpDoorbell::Secret secret{};
  Status made = Status::OK();
  if (rank == 0) made = UdpDoorbell::make_secret(&secret);
  MPI_Request req = MPI_REQUEST_NULL;
  KOLO_MPI_RETURN_IF_ERROR(MPI_Ibcast(secret.data(), static_cast<int>(secret.size()), MPI_BYTE, 0, comm, &req),
                           "doorbell secret MPI_Ibcast");
  s = mpi_wait(&req, "doorbell secret MPI_Ibcast");
  if (!s.ok()) return s;
  std::unique_ptr<UdpDoorbell> bell;
  const Status opened = made.ok() ? UdpDoorbell::open(doorbell_bind_address(hosts, rank), secret, &bell) : made;
  if (!opened.ok()) KOLO_LOG(kWarning, "waits across hosts nap without a doorbell: " << opened.message());
  const UdpDoorbell::Address mine = bell ? bell->address() : UdpDoorbell::Address{};
  std::vector<UdpDoorbell::Address> all(static_cast<size_t>(size));
  s = allgather_bytes(comm, &mine, sizeof mine, all.data(), "doorbell addresses MPI_Iallgather");
  if (!s.ok()) return s;
  if (bell) {
    bell->set_peers(all, rank);
    *out = std::move(bell);
  }
  return Status::OK();
}

}  // namespace kolo
