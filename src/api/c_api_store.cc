// The C ABI's store server (kolo_store_server_*): kolo's TcpStoreServer, for launchers outside kolorun.
#include <chrono>
#include <memory>
#include <string>

#include "api/c_api_internal.h"
#include "kolo/c_api.h"
#include "store/tcp_store_client.h"
#include "store/tcp_store_server.h"

struct kolo_store_server {
  std::unique_ptr<kolo::TcpStoreServer> server;
  std::string token;
};

extern "C" {

int32_t kolo_store_server_start(const char* bind_address, int32_t port, const char* token, kolo_store_server** out) {
  if (bind_address == nullptr || token == nullptr || out == nullptr) {
    return kolo_c::report(kolo::Status::InvalidArgument("kolo_store_server_start: NULL argument"));
  }
  if (port < 0 || port > 65535) {
    return kolo_c::report(kolo::Status::InvalidArgument("kolo_store_server_start: port " + std::to_string(port) +
                                                        " is not from 0 to 65535"));
  }
  auto holder = std::make_unique<kolo_store_server>();
  const kolo::Status s = kolo::TcpStoreServer::start(bind_address, port, token, &holder->server);
  holder->token = token;
  if (s.ok()) *out = holder.release();
  return kolo_c::report(s);
}

int32_t kolo_store_server_port(const kolo_store_server* server) { return server == nullptr ? 0 : server->server->port(); }

int32_t kolo_store_server_add(kolo_store_server* server, const char* key, int64_t delta, int64_t* result) {
  if (server == nullptr || key == nullptr) return kolo_c::report(kolo::Status::InvalidArgument("kolo_store_server_add: NULL argument"));
  std::unique_ptr<kolo::TcpStoreClient> client;
  kolo::Status s = kolo::TcpStoreClient::connect("127.0.0.1", server->server->port(), server->token,
                                                 kolo::KeyValueStore::Clock::now() + std::chrono::seconds(5), &client);
  int64_t sum = 0;
  if (s.ok()) s = client->add(key, delta, &sum);
  if (s.ok() && result != nullptr) *result = sum;
  return kolo_c::report(s);
}

void kolo_store_server_free(kolo_store_server* server) { delete server; }

}  // extern "C"
