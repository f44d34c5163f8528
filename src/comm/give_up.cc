#include "comm/give_up.h"

#include <atomic>
#include <map>
#include <mutex>

namespace kolo {
namespace {

struct GiveUp {
  std::atomic<bool> given_up{false};
  std::mutex mu;
  std::string why;  // under mu
  std::map<int, std::function<void(const std::string&)>> interrupters;
  int next_id = 1;
};

GiveUp& state() {
  static GiveUp* g = new GiveUp();  // never destroyed: waits on kolo's threads may poll it at exit
  return *g;
}

}  // namespace

void give_up_waits(const std::string& why) {
  GiveUp& g = state();
  // Under the lock, so that an interrupter removed (its waits' owner going away) is never called after.
  std::lock_guard<std::mutex> lock(g.mu);
  g.why = why;
  g.given_up = true;
  for (auto& kv : g.interrupters) kv.second(why);
}

bool waits_are_given_up() { return state().given_up.load(std::memory_order_acquire); }

Status waits_given_up(const char* what) {
  GiveUp& g = state();
  if (!g.given_up.load(std::memory_order_acquire)) return Status::OK();
  std::lock_guard<std::mutex> lock(g.mu);
  return Status::Aborted(std::string(what) + " given up: " + g.why);
}

int add_give_up_interrupter(std::function<void(const std::string&)> interrupt) {
  GiveUp& g = state();
  std::lock_guard<std::mutex> lock(g.mu);
  const int id = g.next_id++;
  g.interrupters[id] = std::move(interrupt);
  return id;
}

void remove_give_up_interrupter(int id) {
  GiveUp& g = state();
  std::lock_guard<std::mutex> lock(g.mu);
  g.interrupters.erase(id);
}

}  // namespace kolo
