// kolo's TCPStore client and server from the command line, for the tests that hold them against torch's
// (tests/system/gloo/test_tcp_store_torch.py), and for looking at a job's store by hand.
//
//   store_tool serve [--bind ADDRESS] [--token TOKEN] [--handshake-timeout S] PORT
//       serves (PORT 0: an ephemeral port), prints {"port": N} once listening, and stops when stdin closes
//   store_tool client [--token TOKEN] [--timeout S] [--connect-timeout S] [--reply-timeout S] HOST PORT OP...
//       connects and runs the OPs in order, one JSON line each: {"op", "ok", "seconds", and the result, or
//       "code" and "message"}; exit status 0 where every one succeeded
//
// OPs: set K V | get K | add K DELTA | compare_set K EXPECTED DESIRED | append K V | check N K... |
//      wait N K... | multi_get N K... | multi_set N K V ... | delete K | num_keys | ping | sleep S
// --timeout bounds each get, wait and multi_get (default 10 s). A value written hex:6162 is those bytes;
// values print as JSON strings, one code point per byte.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "store/tcp_store_client.h"
#include "store/tcp_store_server.h"

namespace {

using kolo::Status;
using Clock = std::chrono::steady_clock;

int usage() {
  std::fprintf(stderr,
               "usage: store_tool serve [--bind ADDRESS] [--token TOKEN] [--handshake-timeout S] PORT\n"
               "       store_tool client [--token TOKEN] [--timeout S] [--connect-timeout S] [--reply-timeout S] "
               "HOST PORT OP...\n");
  return 2;
}

std::string json_string(const std::string& bytes) {
  std::string out = "\"";
  for (unsigned char c : bytes) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c >= 0x7f) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", c);
      out += escaped;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

// "hex:6162" -> "ab"; anything else as it is.
std::string value_arg(const std::string& arg) {
  if (arg.compare(0, 4, "hex:") != 0) return arg;
  std::string out;
  for (size_t i = 4; i + 1 < arg.size(); i += 2) out += static_cast<char>(std::stoi(arg.substr(i, 2), nullptr, 16));
  return out;
}

int serve(std::vector<std::string> args) {
  std::string bind = "127.0.0.1";
  std::string token;
  kolo::TcpStoreServer::Options options;
  while (args.size() > 1 && args[0].compare(0, 2, "--") == 0) {
    if (args[0] == "--bind") {
      bind = args[1];
    } else if (args[0] == "--token") {
      token = args[1];
    } else if (args[0] == "--handshake-timeout") {
      options.handshake_timeout = std::chrono::milliseconds(static_cast<int64_t>(std::atof(args[1].c_str()) * 1000));
    } else {
      return usage();
    }
    args.erase(args.begin(), args.begin() + 2);
  }
  if (args.size() != 1) return usage();
  std::unique_ptr<kolo::TcpStoreServer> server;
  Status s = kolo::TcpStoreServer::start(bind, std::atoi(args[0].c_str()), token, options, &server);
  if (!s.ok()) {
    std::printf("{\"ok\": false, \"message\": %s}\n", json_string(s.to_string()).c_str());
    return 1;
  }
  std::printf("{\"port\": %d}\n", server->port());
  std::fflush(stdout);
  char buffer[256];
  while (::read(0, buffer, sizeof buffer) > 0) {
  }
  const uint64_t refused = server->refused();
  server->stop();
  std::printf("{\"stopped\": true, \"refused\": %llu}\n", static_cast<unsigned long long>(refused));
  return 0;
}

struct Op {
  std::string name;
  std::vector<std::string> args;
};

// The OPs after HOST PORT; false where they do not parse.
bool parse_ops(const std::vector<std::string>& words, std::vector<Op>* ops) {
  const auto arity = [](const std::string& name) -> int {
    if (name == "num_keys" || name == "ping") return 0;
    if (name == "get" || name == "delete" || name == "sleep") return 1;
    if (name == "set" || name == "add" || name == "append") return 2;
    if (name == "compare_set") return 3;
    if (name == "check" || name == "wait" || name == "multi_get") return -1;  // N, then N keys
    if (name == "multi_set") return -2;                                         // N, then N pairs
    return -100;
  };
  for (size_t i = 0; i < words.size();) {
    Op op;
    op.name = words[i++];
    int n = arity(op.name);
    if (n == -100) return false;
    if (n < 0) {
      if (i >= words.size()) return false;
      n = std::atoi(words[i].c_str()) * -n + 1;
    }
    if (i + static_cast<size_t>(n) > words.size()) return false;
    op.args.assign(words.begin() + static_cast<long>(i), words.begin() + static_cast<long>(i) + n);
    i += static_cast<size_t>(n);
    ops->push_back(op);
  }
  return true;
}

// The keys (and values) after a count.
std::vector<std::string> every(const std::vector<std::string>& args, size_t from, size_t step) {
  std::vector<std::string> out;
  for (size_t i = from; i < args.size(); i += step) out.push_back(value_arg(args[i]));
  return out;
}

int client(std::vector<std::string> args) {
  std::string token;
  double timeout = 10;
  double connect_timeout = 10;
  double reply_timeout = 30;
  while (args.size() > 1 && args[0].compare(0, 2, "--") == 0) {
    if (args[0] == "--token") {
      token = args[1];
    } else if (args[0] == "--timeout") {
      timeout = std::atof(args[1].c_str());
    } else if (args[0] == "--connect-timeout") {
      connect_timeout = std::atof(args[1].c_str());
    } else if (args[0] == "--reply-timeout") {
      reply_timeout = std::atof(args[1].c_str());
    } else {
      return usage();
    }
    args.erase(args.begin(), args.begin() + 2);
  }
  if (args.size() < 2) return usage();
  std::vector<Op> ops;
  if (!parse_ops(std::vector<std::string>(args.begin() + 2, args.end()), &ops)) return usage();
  const auto seconds = [](double s) {
    return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
  };

  bool all_ok = true;
  const auto report = [&](const std::string& name, Clock::time_point began, const Status& s, const std::string& result) {
    const double took = std::chrono::duration<double>(Clock::now() - began).count();
    std::ostringstream line;
    line << "{\"op\": " << json_string(name) << ", \"ok\": " << (s.ok() ? "true" : "false") << ", \"seconds\": " << took;
    if (s.ok()) {
      line << result;
    } else {
      all_ok = false;
      line << ", \"code\": " << json_string(kolo::status_code_name(s.code()))
           << ", \"message\": " << json_string(s.message());
    }
    line << "}";
    std::printf("%s\n", line.str().c_str());
    std::fflush(stdout);
  };

  std::unique_ptr<kolo::TcpStoreClient> store;
  Clock::time_point began = Clock::now();
  Status s = kolo::TcpStoreClient::connect(args[0], std::atoi(args[1].c_str()), token, began + seconds(connect_timeout),
                                           &store);
  report("connect", began, s, "");
  if (!s.ok()) return 1;
  store->set_reply_timeout(std::chrono::duration_cast<std::chrono::milliseconds>(seconds(reply_timeout)));

  for (const Op& op : ops) {
    began = Clock::now();
    const auto& a = op.args;
    std::string result;
    if (op.name == "set") {
      s = store->set(a[0], value_arg(a[1]));
    } else if (op.name == "get") {
      std::string value;
      s = store->get(a[0], began + seconds(timeout), &value);
      result = ", \"value\": " + json_string(value);
    } else if (op.name == "add") {
      int64_t sum = 0;
      s = store->add(a[0], std::atoll(a[1].c_str()), &sum);
      result = ", \"value\": " + std::to_string(sum);
    } else if (op.name == "compare_set") {
      std::string current;
      s = store->compare_set(a[0], value_arg(a[1]), value_arg(a[2]), &current);
      result = ", \"value\": " + json_string(current);
    } else if (op.name == "append") {
      s = store->append(a[0], value_arg(a[1]));
    } else if (op.name == "check") {
      bool present = false;
      s = store->check(every(a, 1, 1), &present);
      result = std::string(", \"value\": ") + (present ? "true" : "false");
    } else if (op.name == "wait") {
      s = store->wait(every(a, 1, 1), began + seconds(timeout));
    } else if (op.name == "multi_get") {
      std::vector<std::string> values;
      s = store->multi_get(every(a, 1, 1), began + seconds(timeout), &values);
      result = ", \"value\": [";
      for (size_t i = 0; i < values.size(); ++i) result += (i ? ", " : "") + json_string(values[i]);
      result += "]";
    } else if (op.name == "multi_set") {
      s = store->multi_set(every(a, 1, 2), every(a, 2, 2));
    } else if (op.name == "delete") {
      bool deleted = false;
      s = store->delete_key(a[0], &deleted);
      result = std::string(", \"value\": ") + (deleted ? "true" : "false");
    } else if (op.name == "num_keys") {
      int64_t count = 0;
      s = store->num_keys(&count);
      result = ", \"value\": " + std::to_string(count);
    } else if (op.name == "ping") {
      s = store->ping();
    } else if (op.name == "sleep") {
      std::this_thread::sleep_for(seconds(std::atof(a[0].c_str())));
      s = Status::OK();
    }
    report(op.name, began, s, result);
  }
  return all_ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usage();
  const std::string mode = argv[1];
  std::vector<std::string> args(argv + 2, argv + argc);
  if (mode == "serve") return serve(args);
  if (mode == "client") return client(args);
  return usage();
}
