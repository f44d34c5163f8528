// How the Gloo world's ranks find each other (comm/gloo/gloo_world.h): through the key-value store their
// launcher gives them (comm/launcher_env.h): kolorun --gloo's, torchrun's agent's, Ray's rank 0's, or, in a
// bare launch, the one rank 0 serves on MASTER_PORT. Every rank claims its rank under this start's keys
// (a second claim, another job on the same store, fails naming both), says where it runs, and waits for
// the others, saying which are missing; the start is bounded by KOLO_GLOO_TIMEOUT_SECONDS.
//
// A store outlives a start (torchrun keeps its keys across restarts of the workers, and a process may
// init() again after shutdown()): each start's keys are its own, "kolo/<job>/<n>/", n counted by each
// rank (its own n-th start), so that ranks that start together agree on it and never read an earlier
// start's keys.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "comm/launcher_env.h"
#include "store/key_value_store.h"
#include "store/tcp_store_server.h"

namespace kolo {

struct Rendezvous {
  std::unique_ptr<TcpStoreServer> server;  // rank 0 of a bare launch: the store it serves
  std::unique_ptr<KeyValueStore> store;    // this rank's connection (null for a job of one rank)
  bool store_in_process = false;           // `server`, or torch.distributed's store in this process
  std::string store_host;
  int store_port = 0;
  std::string token;
  std::string job_prefix;                  // the job's keys: "kolo/<job>/"
  std::string prefix;                      // this start's keys: "kolo/<job>/<n>/"
  int rank = 0, size = 1;
  std::vector<std::string> hosts;          // each rank's host name, by rank
  std::string nonce;                       // rank 0's claim: what identifies this start's ranks to each other
};

// Collective over the job's ranks. `timeout_seconds` bounds the whole start.
Status rendezvous(const LauncherEnv& env, double timeout_seconds, Rendezvous* out);

// 32 random hex digits.
Status random_hex(std::string* out);

}  // namespace kolo
