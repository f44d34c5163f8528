#include "default_hostfile.h"

#include <fstream>
#include <sstream>

#include "mpirun_command.h"

namespace kolo {
namespace launcher {

bool take_default_hostfile(const std::function<const char*(const char*)>& getenv, LaunchOptions* o,
                           std::string* error) {
  error->clear();
  if (!o->hosts.empty() || !o->discovery_script.empty()) return false;
  for (const char* name : {"OMPI_MCA_orte_default_hostfile", "PRTE_MCA_prte_default_hostfile"}) {
    const char* path = getenv(name);
    if (path == nullptr || *path == '\0') continue;
    std::ifstream in(path);
    std::stringstream text;
    if (!in || !(text << in.rdbuf())) {
      *error = std::string("cannot read the hostfile ") + name + " names ('" + path + "')";
      return false;
    }
    std::string why;
    if (!parse_hostfile_text(text.str(), &o->hosts, &why) || o->hosts.empty()) {
      *error = std::string("the hostfile ") + name + " names ('" + path + "'): " + (why.empty() ? "no hosts" : why);
      o->hosts.clear();
      return false;
    }
    o->hostfile = std::string(path) + " (" + name + ")";
    if (o->num_proc == 0 && !o->elastic()) o->num_proc = total_slots(o->hosts);
    return true;
  }
  return false;
}

}  // namespace launcher
}  // namespace kolo
