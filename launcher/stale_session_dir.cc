#include "stale_session_dir.h"

#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <string>

namespace kolo {
namespace launcher {
namespace {

// Where PRRTE puts its session directories: PRTE_MCA_prte_tmpdir_base, else TMPDIR, TEMP, TMP, /tmp.
std::string session_tmpdir() {
  for (const char* name : {"PRTE_MCA_prte_tmpdir_base", "TMPDIR", "TEMP", "TMP"}) {
    const char* value = std::getenv(name);
    if (value != nullptr && *value != '\0') return value;
  }
  return "/tmp";
}

}  // namespace

void remove_session_dir(pid_t pid) {
  const std::string dir = session_tmpdir() + "/ompi." + std::to_string(pid);
  struct stat s;
  // Another user's (a process of that pid in another pid namespace that shares /tmp) is not ours to touch.
  if (lstat(dir.c_str(), &s) != 0 || !S_ISDIR(s.st_mode) || s.st_uid != getuid()) return;
  // Deepest first, never following a link out of the directory; what cannot go is passed over.
  nftw(
      dir.c_str(),
      [](const char* path, const struct stat*, int, FTW*) {
        std::remove(path);
        return 0;
      },
      16, FTW_DEPTH | FTW_PHYS);
}

}  // namespace launcher
}  // namespace kolo
