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
#include "stop_signals.h"
#include "store/tcp_store_client.h"
#include "store/tcp_store_server.h"

extern char** environ;

namespace kolo {
namespace launcher {
namespace {

// How long ranks get to end after SIGTERM before SIGKILL.
constexpr double kStopGraceSeconds = 5.0;

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

struct Running {
  pid_t pid = -1;
  int rank = -1;     // -1: srun, for every rank
  std::string host;
};

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
    std::cerr << "kolorun: cannot run " << argv[0] << ": " << std::strerror(errno) << "\n";
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

std::string exit_text(int status) {
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    return "exited on signal " + std::to_string(sig) + " (" + strsignal(sig) + ")";
  }
  return "exited with status " + std::to_string(WEXITSTATUS(status));
}

int exit_code(int status) { return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status); }

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

// Tells every rank through the store that the job ends (their peer watch reads it: a rank on another host,
// which a signal to ssh here does not reach, ends too).
void end_job(const TcpStoreServer& server, const GlooStoreAddress& store, const std::string& why) {
  std::unique_ptr<TcpStoreClient> client;
  const auto deadline = KeyValueStore::Clock::now() + std::chrono::seconds(2);
  if (TcpStoreClient::connect("127.0.0.1", server.port(), store.token, deadline, &client).ok()) {
    client->set("kolo/" + store.job_id + "/ended", why);
  }
}

// mpirun's own options mean nothing without it: true (having said so) when one was given.
bool refuses_mpirun_options(const LaunchOptions& options) {
  for (const auto& [given, name] : {std::pair<bool, const char*>{!options.mpi_args.empty(), "--mpi-args"},
                                    {!options.binding_args.empty(), "--binding-args"},
                                    {options.tcp, "--tcp"},
                                    {options.timestamp_output, "--prefix-output-with-timestamp"}}) {
    if (given) {
      std::cerr << "kolorun: " << name << " is mpirun's option, and kolorun --gloo starts no mpirun\n";
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
  std::vector<std::string> argv = {"srun", "--ntasks=" + std::to_string(options.num_proc), "--kill-on-bad-exit=1"};
  argv.insert(argv.end(), options.command.begin(), options.command.end());
  std::string error;
  const pid_t pid = spawn(argv, job_env, "", "", &error);
  if (pid < 0) {
    std::cerr << "kolorun: cannot start srun: " << error << "\n";
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
      std::cerr << "kolorun: cannot start rank " << r.rank << " on " << r.host << ": " << error << "\n";
      for (const Running& p : *running) kill(p.pid, SIGKILL);
      return false;
    }
    running->push_back({pid, r.rank, r.local ? machine.hostname : r.host});
  }
  return true;
}

// The first rank to fail (or a stop signal) ends the job; otherwise all end, and so does the job.
int watch_ranks(const std::vector<Running>& running, const TcpStoreServer& server, const GlooStoreAddress& store) {
  std::map<pid_t, const Running*> alive;
  for (const Running& p : running) alive[p.pid] = &p;
  int result = 0;
  double stopping_since = -1;
  while (!alive.empty()) {
    int status = 0;
    const pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid > 0 && alive.count(pid)) {
      const Running* p = alive[pid];
      alive.erase(pid);
      const bool failed = !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
      if (failed && stopping_since < 0) {
        std::cerr << "kolorun: " << (p->rank >= 0 ? "rank " + std::to_string(p->rank) : std::string("srun")) << " (pid "
                  << pid << " on " << p->host << ") " << exit_text(status) << ": ending the job\n";
        result = exit_code(status);
        stopping_since = now();
        end_job(server, store, "rank " + std::to_string(p->rank) + " " + exit_text(status));
        for (const auto& kv : alive) kill(-kv.first, SIGTERM);
      }
      continue;
    }
    if (stop_signal() != 0 && stopping_since < 0) {
      result = 128 + stop_signal();
      stopping_since = now();
      end_job(server, store, std::string("kolorun was stopped (") + strsignal(stop_signal()) + ")");
      for (const auto& kv : alive) kill(-kv.first, SIGTERM);
    }
    if (stopping_since >= 0 && now() - stopping_since > kStopGraceSeconds) {
      for (const auto& kv : alive) kill(-kv.first, SIGKILL);
    }
    usleep(20000);
  }
  return result;
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
    std::cerr << "kolorun: " << started.message() << "\n";
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
    std::cerr << "kolorun: " << running.size() << " process(es) started; the job's store at " << store.host << ":"
              << store.port << "\n";
  }
  return watch_ranks(running, *server, store);
}

}  // namespace launcher
}  // namespace kolo
