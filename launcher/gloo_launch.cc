#include "gloo_launch.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <iostream>
#include <map>
#include <memory>
#include <vector>

#include "comm/socket/route.h"
#include "forwarded_environment.h"
#include "gloo_plan.h"
#include "gloo_rank_watch.h"
#include "launcher_messages.h"
#include "stop_signals.h"
#include "store/tcp_store_client.h"
#include "store/tcp_store_server.h"

extern char** environ;

namespace kolo {
namespace launcher {
namespace {

std::string random_hex() {
  unsigned char bytes[16] = {0};
  size_t got = 0;
  while (got < sizeof bytes) {
    const ssize_t n = getrandom(bytes + got, sizeof bytes - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    got += static_cast<size_t>(n);
  }
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char b : bytes) {
    out.push_back(digits[b >> 4]);
    out.push_back(digits[b & 15]);
  }
  return out;
}

std::string current_dir() {
  char dir[4096] = {0};
  return getcwd(dir, sizeof dir - 1) != nullptr ? dir : ".";
}

// Starts argv with `env` put in its environment (on top of kolorun's); or, `stdin_lines` not empty, with
// those written to its standard input and the input then closed. -1 with why on failure.
// `output_dir` not empty: the process's standard output and error go to OUTPUT_DIR/stdout and /stderr
// (made where missing), as mpirun's --output-filename lays them out (DIR/1/rank.N/).
pid_t spawn(const std::vector<std::string>& argv, const std::vector<std::pair<std::string, std::string>>& env,
            const std::string& stdin_lines, const std::string& output_dir, std::string* error) {
  int in[2] = {-1, -1};
  if (!stdin_lines.empty() && pipe2(in, O_CLOEXEC) != 0) {
    *error = std::strerror(errno);
    return -1;
  }
  const pid_t pid = fork();
  if (pid < 0) {
    *error = std::strerror(errno);
    return -1;
  }
  if (pid == 0) {
    // A process group of its own: ending the job reaches whatever the rank (or the agent) started.
    setpgid(0, 0);
    signal(SIGPIPE, SIG_DFL);
    if (in[0] >= 0) dup2(in[0], STDIN_FILENO);
    if (!output_dir.empty()) {
      for (const auto& [name, fd] : {std::pair<const char*, int>{"stdout", STDOUT_FILENO}, {"stderr", STDERR_FILENO}}) {
        const int file = ::open((output_dir + "/" + name).c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (file >= 0) dup2(file, fd);
      }
    }
    for (const auto& kv : env) setenv(kv.first.c_str(), kv.second.c_str(), 1);
    std::vector<char*> args;
    std::vector<std::string> words = argv;
    for (std::string& w : words) args.push_back(&w[0]);
    args.push_back(nullptr);
    execvp(args[0], args.data());
    say() << "cannot run " << argv[0] << ": " << std::strerror(errno) << "\n";
    _exit(127);
  }
  setpgid(pid, pid);  // as the child does: whichever runs first
  if (in[0] >= 0) {
    close(in[0]);
    const char* p = stdin_lines.data();
    size_t left = stdin_lines.size();
    while (left > 0) {
      const ssize_t n = write(in[1], p, left);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      p += n;
      left -= static_cast<size_t>(n);
    }
    close(in[1]);
  }
  return pid;
}

// OUTPUT_FILENAME/1/rank.N, made (with its parents) where missing; "" without --output-filename.
std::string rank_output_dir(const std::string& output_filename, int rank) {
  if (output_filename.empty()) return "";
  std::string path;
  for (const std::string& part : {output_filename, std::string("1"), "rank." + std::to_string(rank)}) {
    path += (path.empty() ? "" : "/") + part;
    ::mkdir(path.c_str(), 0755);
  }
  return path;
}

// The address the ranks reach the store at: this host's towards the first other host, or the loopback
// where every rank runs here.
std::string store_host(const std::vector<GlooRank>& ranks) {
  for (const GlooRank& r : ranks) {
    if (r.local) continue;
    const std::string here = source_address_towards(r.host);
    if (!here.empty()) return here;
  }
  return "127.0.0.1";
}

// Whether the ranks' survivors go on in place: --in-place, or KOLO_GLOO_IN_PLACE=1 given to the ranks.
bool in_place(const LaunchOptions& options) {
  std::string value = std::getenv("KOLO_GLOO_IN_PLACE") != nullptr ? std::getenv("KOLO_GLOO_IN_PLACE") : "";
  for (const auto& kv : options.settings) {
    if (kv.first == "KOLO_GLOO_IN_PLACE") value = kv.second;
  }
  return options.in_place || value == "1";
}

// mpirun's own options mean nothing without it: true (having said so) when one was given.
bool refuses_mpirun_options(const LaunchOptions& options) {
  for (const auto& [given, name] : {std::pair<bool, const char*>{!options.mpi_args.empty(), "--mpi-args"},
                                    {!options.binding_args.empty(), "--binding-args"},
                                    {options.tcp, "--tcp"},
                                    {options.timestamp_output, "--prefix-output-with-timestamp"}}) {
    if (given) {
      say() << name << " is mpirun's option, and kolorun --gloo starts no mpirun\n";
      return true;
    }
  }
  return false;
}

void print_plan(const LaunchOptions& options, const std::vector<GlooRank>& ranks, const GlooStoreAddress& store,
                bool by_srun, const std::string& dir) {
  std::cout << "kolorun --gloo: serves the job's store on " << store.host << " (port chosen at start); "
            << (by_srun ? "srun -n " + std::to_string(options.num_proc) : std::to_string(ranks.size()) + " ranks")
            << "\n";
  if (by_srun) return;
  for (const GlooRank& r : ranks) {
    std::cout << "rank " << r.rank << " on " << r.host << (r.local ? " (here)" : "") << ": "
              << shell_join(r.local ? options.command : remote_rank_argv(options, r.host, dir, options.command))
              << "\n";
  }
}

// One srun for every rank: each reads its rank from Slurm (SLURM_PROCID), the store from here.
bool start_by_srun(const LaunchOptions& options, const GlooStoreAddress& store, std::vector<Running>* running) {
  GlooRank any;
  std::vector<std::pair<std::string, std::string>> job_env;
  for (const auto& kv : gloo_rank_environment(options, any, options.num_proc, store)) {
    if (kv.first != "RANK" && kv.first != "LOCAL_RANK" && kv.first != "LOCAL_WORLD_SIZE") job_env.push_back(kv);
  }
  // --mpi=none: the ranks meet through kolorun's store; a cluster whose MpiDefault is pmix would otherwise give
  // them PMIx's variables, and kolo would take them for an MPI job.
  std::vector<std::string> argv = {"srun", "--ntasks=" + std::to_string(options.num_proc), "--kill-on-bad-exit=1",
                                   "--mpi=none"};
  argv.insert(argv.end(), options.command.begin(), options.command.end());
  std::string error;
  const pid_t pid = spawn(argv, job_env, "", "", &error);
  if (pid < 0) {
    say() << "cannot start srun: " << error << "\n";
    return false;
  }
  running->push_back({pid, -1, "the allocation"});
  return true;
}

// A remote rank's environment, written to its agent's stdin: the launching environment, as mpirun forwards it
// (forwarded_environment.h), then the rank's own.
std::string remote_environment_lines(const std::vector<std::pair<std::string, std::string>>& env) {
  std::string lines;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    const std::string name = entry.substr(0, entry.find('='));
    if (forwarded_to_ranks(name) && entry.find('\n') == std::string::npos) lines += entry + "\n";
  }
  for (const auto& kv : env) lines += kv.first + "=" + kv.second + "\n";
  return lines + "\n";
}

bool start_each_rank(const LaunchOptions& options, const Machine& machine, const std::vector<GlooRank>& ranks,
                     const GlooStoreAddress& store, const std::string& dir, std::vector<Running>* running) {
  for (const GlooRank& r : ranks) {
    const auto env = gloo_rank_environment(options, r, static_cast<int>(ranks.size()), store);
    const std::string output_dir = rank_output_dir(options.output_filename, r.rank);
    std::string error;
    const pid_t pid = r.local ? spawn(options.command, env, "", output_dir, &error)
                              : spawn(remote_rank_argv(options, r.host, dir, options.command), {},
                                      remote_environment_lines(env), output_dir, &error);
    if (pid < 0) {
      say() << "cannot start rank " << r.rank << " on " << r.host << ": " << error << "\n";
      for (const Running& p : *running) kill(p.pid, SIGKILL);
      return false;
    }
    running->push_back({pid, r.rank, r.local ? machine.hostname : r.host});
  }
  return true;
}

}  // namespace

int run_gloo(const LaunchOptions& options, const Machine& machine, bool in_slurm_allocation) {
  if (refuses_mpirun_options(options)) return 2;
  const bool by_srun = in_slurm_allocation && options.hosts.empty();
  std::vector<Host> hosts = effective_hosts(options);
  const std::vector<GlooRank> ranks = plan_gloo_ranks(hosts, options.num_proc, machine.hostname);
  GlooStoreAddress store;
  store.host = by_srun ? source_address_towards("8.8.8.8") : store_host(ranks);
  if (store.host.empty()) store.host = machine.hostname;
  store.token = random_hex();
  store.job_id = "kolorun-" + random_hex().substr(0, 12);
  const std::string dir = current_dir();
  if (options.dry_run) {
    print_plan(options, ranks, store, by_srun, dir);
    return 0;
  }
  std::unique_ptr<TcpStoreServer> server;
  const Status started = TcpStoreServer::start(store.host == "127.0.0.1" ? "127.0.0.1" : "0.0.0.0", 0, store.token,
                                               &server);
  if (!started.ok()) {
    say() << started.message() << "\n";
    return 2;
  }
  store.port = server->port();
  install_stop_handlers();
  std::vector<Running> running;
  if (by_srun ? !start_by_srun(options, store, &running)
              : !start_each_rank(options, machine, ranks, store, dir, &running)) {
    return 2;
  }
  if (options.verbose) {
    say() << running.size() << " process(es) started; the job's store at " << store.host << ":"
              << store.port << "\n";
  }
  return watch_ranks(running, *server, store, in_place(options));
}

pid_t start_gloo_attempt(const LaunchOptions& options, const Machine& machine, int* out_fd, int* err_fd,
                         std::string* error) {
  int out[2] = {-1, -1}, err[2] = {-1, -1};
  if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) {
    *error = std::string("kolorun: pipe: ") + std::strerror(errno);
    return -1;
  }
  std::cout.flush();
  std::cerr.flush();
  const pid_t pid = fork();
  if (pid < 0) {
    *error = std::string("kolorun: fork: ") + std::strerror(errno);
    return -1;
  }
  if (pid == 0) {
    dup2(out[1], STDOUT_FILENO);
    dup2(err[1], STDERR_FILENO);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    const int status = run_gloo(options, machine, false);
    std::cout.flush();
    std::cerr.flush();
    _exit(status);
  }
  close(out[1]);
  close(err[1]);
  fcntl(out[0], F_SETFL, O_NONBLOCK);
  fcntl(err[0], F_SETFL, O_NONBLOCK);
  *out_fd = out[0];
  *err_fd = err[0];
  return pid;
}

}  // namespace launcher
}  // namespace kolo
