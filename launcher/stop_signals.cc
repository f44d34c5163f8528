#include "stop_signals.h"

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <thread>

namespace kolo {
namespace launcher {
namespace {

volatile sig_atomic_t g_stop_signal = 0;
volatile sig_atomic_t g_mpirun_pid = 0;

void pass_on_stop(int sig) {
  g_stop_signal = sig;
  if (g_mpirun_pid > 0) kill(g_mpirun_pid, sig);
}

}  // namespace

void install_stop_handlers() {
  struct sigaction sa {};
  sa.sa_handler = pass_on_stop;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

int stop_signal() { return g_stop_signal; }

void set_mpirun_pid(pid_t pid) { g_mpirun_pid = pid; }

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

bool pause_for(double seconds) {
  const double until = now() + seconds;
  while (!g_stop_signal && now() < until) {
    std::this_thread::sleep_for(std::chrono::duration<double>(std::min(0.05, until - now())));
  }
  return !g_stop_signal;
}

}  // namespace launcher
}  // namespace kolo
