// The NCCL kolo calls, found the first time a GPU op needs it rather than linked: a process has one
// libnccl.so.2, and the framework beside kolo (PyPI's torch brings NCCL 2.30 and needs its symbols) must
// get its own whichever was imported first. So libkolo names no NCCL library; at first use it takes, in
// order:
//   1. the libnccl.so.2 already loaded in the process (the framework's, loaded with it);
//   2. KOLO_NCCL_LIBRARY, a path, where set;
//   3. the library kolo was built against (its path at build time), then libnccl.so.2 from the loader's
//      search path.
// The NCCL found must be 2.x and have every call kolo makes, but ncclCommShrink (2.27+), which is
// optional: without it kolo makes new communicators after a lost peer.
#pragma once

#include <nccl.h>

#include <string>

#include "kolo/status.h"

namespace kolo {

struct NcclApi {
  decltype(&ncclGetVersion) GetVersion = nullptr;
  decltype(&ncclGetUniqueId) GetUniqueId = nullptr;
  decltype(&ncclGetErrorString) GetErrorString = nullptr;
  decltype(&ncclGetLastError) GetLastError = nullptr;
  decltype(&ncclCommInitRankConfig) CommInitRankConfig = nullptr;
  decltype(&ncclCommGetAsyncError) CommGetAsyncError = nullptr;
  decltype(&ncclCommFinalize) CommFinalize = nullptr;
  decltype(&ncclCommDestroy) CommDestroy = nullptr;
  decltype(&ncclCommAbort) CommAbort = nullptr;
  decltype(&ncclAllReduce) AllReduce = nullptr;
  decltype(&ncclReduceScatter) ReduceScatter = nullptr;
  decltype(&ncclAllGather) AllGather = nullptr;
  decltype(&ncclBroadcast) Broadcast = nullptr;
  decltype(&ncclSend) Send = nullptr;
  decltype(&ncclRecv) Recv = nullptr;
  decltype(&ncclGroupStart) GroupStart = nullptr;
  decltype(&ncclGroupEnd) GroupEnd = nullptr;
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 27, 0)
  decltype(&ncclCommShrink) CommShrink = nullptr;  // null: this NCCL has none
#endif
  std::string path;     // the file it was loaded from
  std::string version;  // "2.30.7", as the library says
};

// The NCCL of this process, loaded on the first call (thread-safe); kUnsupported, saying why, where none
// could be loaded or it lacks what kolo calls. The same library for the life of the process.
Status nccl_api(const NcclApi** api);

// Its version ("2.30.7") once loaded, else empty; never loads it.
std::string nccl_version_if_loaded();

// The NCCL a first GPU op would use, in words: "2.30.7 (/.../nvidia/nccl/lib/libnccl.so.2, already loaded)",
// or why none (for `kolorun --check-build`). Loads it, as the first GPU op would.
std::string nccl_loaded_description();

}  // namespace kolo
