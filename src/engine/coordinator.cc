#include "engine/coordinator.h"

#include <algorithm>
#include <map>
#include <sstream>

#include "common/ranks.h"
#include "engine/response_builder.h"

namespace kolo {
namespace {

constexpr size_t kNamesShown = 4;  // a report names a few ops and counts the rest

std::string name_list(const std::vector<std::string>& names) {
  std::ostringstream s;
  for (size_t i = 0; i < names.size() && i < kNamesShown; ++i) s << (i ? ", " : "") << "'" << names[i] << "'";
  if (names.size() > kNamesShown) s << " and " << names.size() - kNamesShown << " more";
  return s.str();
}

}  // namespace

void Coordinator::add(const Request& request, double now) {
  if (request.kind == OpKind::kJoin) {
    add_join(request);
    return;
  }
  auto it = table_.find(request.name);
  if (it == table_.end()) {
    Pending p;
    p.by_rank.resize(size_);
    p.submitted.assign(size_, false);
    p.first_seen = now - request.waited_seconds;
    it = table_.emplace(request.name, std::move(p)).first;
    arrival_order_.push_back(request.name);
  }
  Pending& p = it->second;
  if (request.rank < 0 || request.rank >= size_ || p.submitted[request.rank]) return;  // never sent
  p.first_seen = std::min(p.first_seen, now - request.waited_seconds);
  p.by_rank[request.rank] = request;
  p.submitted[request.rank] = true;
  ++p.count;
  complete_if_ready(request.name);
}

bool Coordinator::complete_if_ready(const std::string& name) {
  auto it = table_.find(name);
  if (it == table_.end()) return false;
  Pending& p = it->second;
  std::vector<int> joined;
  for (int r = 0; r < size_ && joined_count_ > 0; ++r) {
    if (joined_[r] && !p.submitted[r]) joined.push_back(r);
  }
  if (p.count + static_cast<int>(joined.size()) < size_) return false;
  std::vector<Request> submitted;
  submitted.reserve(static_cast<size_t>(p.count));
  for (int r = 0; r < size_; ++r) {
    if (p.submitted[r]) submitted.push_back(std::move(p.by_rank[r]));
  }
  ready_.push_back(build_response(submitted, joined, names_));
  table_.erase(it);
  return true;
}

void Coordinator::add_join(const Request& request) {
  if (request.rank < 0 || request.rank >= size_ || joined_[request.rank]) return;
  joined_[request.rank] = true;
  ++joined_count_;
  last_joined_ = request.rank;
  // Ops that waited only on this rank can run now, in the order they first arrived.
  for (const std::string& name : arrival_order_) complete_if_ready(name);
  if (joined_count_ == size_) {
    Response done;
    done.name = request.name;
    done.kind = OpKind::kJoin;
    done.root = last_joined_;
    ready_.push_back(done);
    joined_.assign(static_cast<size_t>(size_), false);
    joined_count_ = 0;
    last_joined_ = -1;
  }
}

std::vector<Response> Coordinator::take_ready() {
  if (table_.size() * 2 < arrival_order_.size()) {
    arrival_order_.erase(std::remove_if(arrival_order_.begin(), arrival_order_.end(),
                                        [this](const std::string& n) { return !table_.count(n); }),
                         arrival_order_.end());
  }
  std::vector<Response> out;
  out.swap(ready_);
  return out;
}

std::vector<std::string> Coordinator::submitted_by(int rank) const {
  std::vector<std::string> names;
  for (const std::string& name : arrival_order_) {
    auto it = table_.find(name);
    if (it != table_.end() && it->second.submitted[rank]) names.push_back(name);
  }
  return names;
}

std::string Coordinator::describe_missing(const std::vector<int>& missing) const {
  // Ranks that wait on the same other ops are reported together.
  std::map<std::vector<std::string>, std::vector<int>> by_instead;
  for (int r : missing) by_instead[submitted_by(r)].push_back(r);
  std::ostringstream s;
  for (const auto& kv : by_instead) {
    s << "\n    " << names_.ranks(kv.second) << " submitted instead: ";
    if (kv.first.empty()) {
      s << "nothing (not yet at this step, or busy outside kolo)";
    } else {
      s << name_list(kv.first);
    }
  }
  return s.str();
}

StallCheck Coordinator::check_stalls(double now) {
  StallCheck result;
  const bool check = policy_.check_seconds > 0;
  const bool fail = policy_.shutdown_seconds > 0;
  if (!check && !fail) return result;

  // Stalled names, grouped by the ranks they are missing on, so 161 gradients stuck behind one
  // slow rank read as one line.
  struct Group {
    std::vector<std::string> names;
    std::vector<int> submitted;
    double oldest = 0.0;
  };
  std::map<std::vector<int>, Group> report_groups;
  std::vector<std::string> expired;
  for (const std::string& name : arrival_order_) {
    auto it = table_.find(name);
    if (it == table_.end()) continue;
    Pending& p = it->second;
    const double waited = now - p.first_seen;
    const bool expires = fail && waited >= policy_.shutdown_seconds;
    const bool due = check && !p.reported && waited >= policy_.check_seconds;
    if (!expires && !due) continue;
    std::vector<int> missing, submitted;
    for (int r = 0; r < size_; ++r) {
      if (p.submitted[r]) {
        submitted.push_back(r);
      } else if (!joined_[r]) {
        missing.push_back(r);
      }
    }
    if (expires) {
      expired.push_back(name);
      std::ostringstream m;
      m << "Stalled op failed: tensor '" << name << "' (" << op_kind_name(p.by_rank[submitted[0]].kind)
        << ") was submitted by " << names_.ranks(submitted) << " but not by "
        << names_.ranks(missing) << " within KOLO_STALL_SHUTDOWN_SECONDS="
        << policy_.shutdown_seconds << "." << describe_missing(missing);
      result.failures.push_back(
          error_response(names_, name, p.by_rank[submitted[0]].kind, StatusCode::kAborted, m.str()));
      continue;
    }
    if (due) {
      p.reported = true;
      Group& g = report_groups[missing];
      g.names.push_back(name);
      g.submitted = submitted;
      g.oldest = std::max(g.oldest, waited);
    }
  }
  for (const std::string& name : expired) table_.erase(name);

  if (!report_groups.empty()) {
    std::ostringstream s;
    s << names_.prefix() << "Stall: some ranks have submitted ops that others have not, for more than "
      << policy_.check_seconds << " s. Ranks must submit the same names: look for a branch taken on "
      << "some ranks only (an extra evaluation step, uneven data).";
    for (const auto& kv : report_groups) {
      const Group& g = kv.second;
      s << "\n  " << g.names.size() << (g.names.size() == 1 ? " op" : " ops") << " waiting up to "
        << static_cast<long long>(g.oldest) << " s, submitted by " << names_.ranks(g.submitted)
        << ", missing on " << names_.ranks(kv.first) << ": " << name_list(g.names)
        << describe_missing(kv.first);
    }
    if (fail) {
      s << "\n  They fail on every rank after KOLO_STALL_SHUTDOWN_SECONDS=" << policy_.shutdown_seconds << " s.";
    }
    result.report = s.str();
  }
  return result;
}

}  // namespace kolo
