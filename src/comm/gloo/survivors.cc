#include "comm/gloo/survivors.h"

#include <algorithm>
#include <sstream>
#include <thread>

#include "comm/gloo/liveness.h"
#include "comm/gloo/rendezvous.h"
#include "common/clock.h"
#include "common/ranks.h"

namespace kolo {
namespace {

constexpr auto kPoll = std::chrono::milliseconds(50);

std::string join(const std::vector<int>& ranks) {
  std::string text;
  for (int r : ranks) text += (text.empty() ? "" : ",") + std::to_string(r);
  return text;
}

std::vector<int> split(const std::string& text) {
  std::vector<int> ranks;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (!item.empty()) ranks.push_back(std::stoi(item));
  }
  return ranks;
}

Status parse_agreed(const std::string& text, SurvivorsAgreed* out) {
  const size_t eol = text.find('\n');
  if (eol == std::string::npos) return Status::Internal("the survivors' agreement in the store is garbled: " + text);
  out->nonce = text.substr(0, eol);
  out->members = split(text.substr(eol + 1));
  return Status::OK();
}

std::string members_key(const std::string& prefix) { return prefix + "members"; }

// What the survivors learn of a rank that has not come.
class Absentees {
 public:
  Absentees(KeyValueStore& store, const Generation& failed, double lost_after)
      : store_(store), failed_(failed), lost_after_(lost_after),
        beats_(static_cast<size_t>(failed.size), -1), since_(static_cast<size_t>(failed.size), steady_seconds()) {}

  // Whether rank r is out: its process gone, silent for lost_after, or named lost by rank 0's peer watch.
  Status out(int r, bool* is_out) {
    int64_t n = 0;
    Status s = store_.add(Liveness::beat_key(failed_, r), 0, &n);
    if (!s.ok()) return s;
    const double now = steady_seconds();
    if (n != beats_[static_cast<size_t>(r)]) {
      beats_[static_cast<size_t>(r)] = n;
      since_[static_cast<size_t>(r)] = now;
    }
    bool held = true;
    if (n > 0) {
      s = store_.check({Liveness::held_key(failed_, r)}, &held);  // it was there: is it still?
    } else if (!failed_.previous.empty()) {
      s = held_before(r, &held);  // it agreed on the failed generation, but never entered it
    }
    if (!s.ok()) return s;
    *is_out = !held || now - since_[static_cast<size_t>(r)] >= lost_after_ || named_lost() == r;
    return Status::OK();
  }

 private:
  // Whether rank r of the failed generation still holds its key of the generation before (where it was
  // members_[r]): a process holds each generation's key it entered until it ends.
  Status held_before(int r, bool* held) {
    if (members_.empty()) {
      std::string text;
      SurvivorsAgreed agreed;
      Status s = store_.get(members_key(failed_.prefix), KeyValueStore::Clock::now() + std::chrono::seconds(5), &text);
      if (s.ok()) s = parse_agreed(text, &agreed);
      if (!s.ok()) return s;
      if (static_cast<int>(agreed.members.size()) != failed_.size) {
        return Status::Internal("the survivors' agreement in the store names " + std::to_string(agreed.members.size()) +
                                " ranks for a generation of " + std::to_string(failed_.size));
      }
      members_ = std::move(agreed.members);
    }
    return store_.check({Liveness::held_key(Generation{failed_.previous, 0, 1, ""}, members_[static_cast<size_t>(r)])}, held);
  }

  int named_lost() {
    bool said = false;
    std::string word;
    if (!store_.check({failed_.prefix + "lost"}, &said).ok() || !said) return -1;
    if (!store_.get(failed_.prefix + "lost", KeyValueStore::Clock::now() + std::chrono::seconds(1), &word).ok()) return -1;
    std::istringstream in(word);
    int r = -1;
    in >> r;
    return r;
  }

  KeyValueStore& store_;
  const Generation& failed_;
  const double lost_after_;
  std::vector<int64_t> beats_;
  std::vector<double> since_;
  std::vector<int> members_;  // the failed generation's ranks in the one before (read once, where asked)
};

}  // namespace

Status agree_on_survivors(KeyValueStore& store, const Generation& failed, const std::string& next_prefix,
                          double lost_after_seconds, SurvivorsAgreed* out) {
  const std::string agreed_key = members_key(next_prefix);
  auto here_key = [&](int r) { return next_prefix + "here/" + std::to_string(r); };
  Status s = store.set(here_key(failed.rank), "1");
  Absentees absentees(store, failed, lost_after_seconds);
  std::string agreed;
  while (s.ok() && agreed.empty()) {
    bool decided = false;
    s = store.check({agreed_key}, &decided);
    if (s.ok() && decided) {
      s = store.get(agreed_key, KeyValueStore::Clock::now() + std::chrono::seconds(5), &agreed);
      break;
    }
    std::vector<int> here;
    bool pending = false;
    for (int r = 0; s.ok() && r < failed.size && !pending; ++r) {
      bool came = r == failed.rank, is_out = false;
      if (!came) s = store.check({here_key(r)}, &came);
      if (s.ok() && !came) s = absentees.out(r, &is_out);
      if (came) here.push_back(r);
      pending = s.ok() && !came && !is_out;
    }
    if (!s.ok()) break;
    if (pending) {
      std::this_thread::sleep_for(kPoll);
      continue;
    }
    // Every rank came or is out: propose; the first proposal written is the answer.
    std::string nonce;
    s = random_hex(&nonce);
    if (s.ok()) s = store.compare_set(agreed_key, "", nonce + "\n" + join(here), &agreed);
  }
  if (!s.ok()) return Status(s.code(), "the survivors' agreement: " + s.message());
  s = parse_agreed(agreed, out);
  if (!s.ok()) return s;
  if (!std::binary_search(out->members.begin(), out->members.end(), failed.rank)) {
    return Status::Aborted("rank " + std::to_string(failed.rank) + " of " + std::to_string(failed.size) +
                           " is left out: the survivors agreed to go on as " + ranks_phrase(out->members) +
                           " (this rank came after they had agreed, or seemed lost to them); it must end");
  }
  return Status::OK();
}

Status members_still_there(KeyValueStore& store, const Generation& failed, const std::vector<int>& members) {
  for (int m : members) {
    if (m == failed.rank) continue;
    bool held = true;
    Status s = store.check({Liveness::held_key(failed, m)}, &held);
    if (!s.ok()) return s;
    if (!held) {
      return Status::PeersFailed("rank " + std::to_string(m) + " of the failed generation, which the survivors "
                                 "agreed on, has ended since");
    }
  }
  return Status::OK();
}

bool agree_and_through_store(KeyValueStore& store, const Generation& generation, int round, double bound_seconds,
                             int* bits) {
  const std::string prefix = generation.prefix + "and/" + std::to_string(round) + "/";
  const std::string result_key = prefix + "result";
  auto bits_key = [&](int r) { return prefix + std::to_string(r); };
  if (!store.set(bits_key(generation.rank), std::to_string(*bits)).ok()) return false;
  const double deadline = steady_seconds() + bound_seconds;
  std::string result;
  while (result.empty()) {
    bool decided = false;
    if (!store.check({result_key}, &decided).ok()) return false;
    if (decided) {
      if (!store.get(result_key, KeyValueStore::Clock::now() + std::chrono::seconds(5), &result).ok()) return false;
      break;
    }
    int all = ~0;
    bool complete = true, gone = false;
    for (int r = 0; r < generation.size; ++r) {
      bool came = false, held = true;
      if (!store.check({bits_key(r)}, &came).ok()) return false;
      std::string value;
      if (came && store.get(bits_key(r), KeyValueStore::Clock::now() + std::chrono::seconds(5), &value).ok()) {
        all &= std::stoi(value);
        continue;
      }
      complete = false;
      if (!store.check({Liveness::held_key(generation, r)}, &held).ok()) return false;
      gone = gone || !held;
    }
    if (complete || gone || steady_seconds() >= deadline) {
      const std::string proposal = std::string(complete ? "1" : "0") + " " + std::to_string(all);
      if (!store.compare_set(result_key, "", proposal, &result).ok()) return false;
      break;
    }
    std::this_thread::sleep_for(kPoll);
  }
  std::istringstream in(result);
  int complete = 0;
  in >> complete >> *bits;
  return complete == 1;
}

}  // namespace kolo
