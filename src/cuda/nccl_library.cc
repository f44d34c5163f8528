#include "cuda/nccl_library.h"

#include <dlfcn.h>
#include <link.h>

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <vector>

#include "cuda/cuda_status.h"

namespace kolo {
namespace {

constexpr const char* kSoname = "libnccl.so.2";

struct Loaded {
  NcclApi api;
  Status status;
  std::string how;  // "already loaded", "KOLO_NCCL_LIBRARY", ...
};

std::string path_of(void* handle, const std::string& fallback) {
  link_map* map = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name != nullptr && *map->l_name) {
    return map->l_name;
  }
  return fallback;
}

template <typename F>
bool find(void* handle, const char* name, F* out, std::vector<std::string>* missing) {
  *out = reinterpret_cast<F>(dlsym(handle, name));
  if (*out == nullptr && missing != nullptr) missing->push_back(name);
  return *out != nullptr;
}

// Fills `api` from an opened library; what it lacks, in words, or empty.
std::string bind(void* handle, NcclApi* api) {
  std::vector<std::string> missing;
  find(handle, "ncclGetVersion", &api->GetVersion, &missing);
  find(handle, "ncclGetUniqueId", &api->GetUniqueId, &missing);
  find(handle, "ncclGetErrorString", &api->GetErrorString, &missing);
  find(handle, "ncclGetLastError", &api->GetLastError, &missing);
  find(handle, "ncclCommInitRankConfig", &api->CommInitRankConfig, &missing);
  find(handle, "ncclCommGetAsyncError", &api->CommGetAsyncError, &missing);
  find(handle, "ncclCommFinalize", &api->CommFinalize, &missing);
  find(handle, "ncclCommDestroy", &api->CommDestroy, &missing);
  find(handle, "ncclCommAbort", &api->CommAbort, &missing);
  find(handle, "ncclAllReduce", &api->AllReduce, &missing);
  find(handle, "ncclReduceScatter", &api->ReduceScatter, &missing);
  find(handle, "ncclAllGather", &api->AllGather, &missing);
  find(handle, "ncclBroadcast", &api->Broadcast, &missing);
  find(handle, "ncclSend", &api->Send, &missing);
  find(handle, "ncclRecv", &api->Recv, &missing);
  find(handle, "ncclGroupStart", &api->GroupStart, &missing);
  find(handle, "ncclGroupEnd", &api->GroupEnd, &missing);
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 27, 0)
  find(handle, "ncclCommShrink", &api->CommShrink, nullptr);  // optional
#endif
  std::string text;
  for (const std::string& m : missing) text += (text.empty() ? "" : ", ") + m;
  return text;
}

// Opens the NCCL this process should use; null with *why set where none opens.
void* open_nccl(std::string* how, std::string* why) {
  // The framework's, loaded before kolo's first GPU op (PyPI's torch loads its own at import).
  if (void* h = dlopen(kSoname, RTLD_NOW | RTLD_NOLOAD)) {
    *how = "already loaded";
    return h;
  }
  std::vector<std::pair<std::string, std::string>> tries;  // path, how
  if (const char* env = std::getenv("KOLO_NCCL_LIBRARY"); env != nullptr && *env != '\0') {
    tries.emplace_back(env, "KOLO_NCCL_LIBRARY");
  }
#ifdef KOLO_NCCL_BUILD_LIBRARY
  tries.emplace_back(KOLO_NCCL_BUILD_LIBRARY, "the one kolo was built against");
#endif
  tries.emplace_back(kSoname, "the loader's search path");
  for (const auto& t : tries) {
    if (void* h = dlopen(t.first.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      *how = t.second;
      return h;
    }
    const char* e = dlerror();
    *why += (why->empty() ? "" : "; ") + t.first + ": " + (e != nullptr ? e : "cannot be opened");
    if (t.second == "KOLO_NCCL_LIBRARY") break;  // asked for that one: no other
  }
  return nullptr;
}

std::atomic<bool> g_loaded{false};

const Loaded& loaded() {
  static Loaded l;
  static std::once_flag once;
  std::call_once(once, [] {
    struct Done {
      ~Done() { g_loaded = true; }
    } done;
    std::string why;
    void* h = open_nccl(&l.how, &why);
    if (h == nullptr) {
      l.status = Status::Unsupported("NCCL could not be loaded (" + why +
                                     "); set KOLO_NCCL_LIBRARY to a libnccl.so.2, or install NCCL 2");
      return;
    }
    l.api.path = path_of(h, kSoname);
    const std::string missing = bind(h, &l.api);
    if (!missing.empty()) {
      l.status = Status::Unsupported("the NCCL at " + l.api.path + " lacks " + missing + ", which kolo calls");
      return;
    }
    int v = 0;
    l.api.GetVersion(&v);
    // NCCL 2.x codes its version as major*10000 + minor*100 + patch (2.9+).
    l.api.version = std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
    if (v / 10000 != 2) {
      l.status = Status::Unsupported("the NCCL at " + l.api.path + " is " + l.api.version + "; kolo needs NCCL 2");
    }
  });
  return l;
}

}  // namespace

Status nccl_api(const NcclApi** api) {
  const Loaded& l = loaded();
  if (!l.status.ok()) return l.status;
  *api = &l.api;
  return Status::OK();
}

std::string nccl_version_if_loaded() {
  if (!g_loaded) return "";
  const Loaded& l = loaded();
  return l.status.ok() ? l.api.version : "";
}

std::string nccl_loaded_description() {
  const Loaded& l = loaded();
  if (!l.status.ok()) return l.status.message();
  return l.api.version + " (" + l.api.path + ", " + l.how + ")";
}

Status nccl_status(ncclResult_t r, const std::string& what, ncclComm_t comm) {
  if (r == ncclSuccess || r == ncclInProgress) return Status::OK();
  const NcclApi* api = nullptr;
  if (!nccl_api(&api).ok()) return Status::Internal(what + " failed: NCCL error " + std::to_string(static_cast<int>(r)));
  std::string m = what + " failed: " + api->GetErrorString(r);
  const char* last = api->GetLastError(comm);
  if (last != nullptr && *last != '\0') m += std::string(" (") + last + ")";
  return Status::Internal(m);
}

}  // namespace kolo
