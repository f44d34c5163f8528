// kolo's TCPStore (store/): its client against its server, call by call with exact values; the waits
// (released by another client, bounded by their deadlines, cut short by a server that stops); the job's
// token (a stranger's connection closed unread); and the server fed the exact bytes torch 2.x's client
// sends, byte by byte too. The same client and server against torch's own: tests/system/gloo.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "store/tcp_store_client.h"
#include "store/tcp_store_server.h"
#include "store/tcp_store_wire.h"

namespace kolo {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using tcp_store::QueryType;

Clock::time_point in(milliseconds d) { return Clock::now() + d; }

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::string where(int port) { return "127.0.0.1:" + std::to_string(port); }

std::unique_ptr<TcpStoreServer> serve(const std::string& token = "",
                                      TcpStoreServer::Options options = TcpStoreServer::Options()) {
  std::unique_ptr<TcpStoreServer> server;
  const Status s = TcpStoreServer::start("127.0.0.1", 0, token, options, &server);
  EXPECT_TRUE(s.ok()) << s.to_string();
  return server;
}

std::unique_ptr<TcpStoreClient> connect_to(int port, const std::string& token = "") {
  std::unique_ptr<TcpStoreClient> client;
  const Status s = TcpStoreClient::connect("127.0.0.1", port, token, in(milliseconds(5000)), &client);
  EXPECT_TRUE(s.ok()) << s.to_string();
  return client;
}

// A port nobody listens on (bound, then let go).
int unused_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t length = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &length);
  ::close(fd);
  return ntohs(a.sin_port);
}

// A plain socket to the server, to send it bytes as a given client would.
class Raw {
 public:
  explicit Raw(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<uint16_t>(port));
    EXPECT_EQ(::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    const int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  ~Raw() { ::close(fd_); }

  void send(const std::string& bytes) { ASSERT_EQ(::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL), ssize_t(bytes.size())); }
  // Exactly n bytes within `timeout`; fewer where the connection closed or time ran out.
  std::string recv(size_t n, milliseconds timeout = milliseconds(3000)) {
    std::string out;
    const auto until = in(timeout);
    while (out.size() < n) {
      pollfd p{fd_, POLLIN, 0};
      const auto left = std::chrono::duration_cast<milliseconds>(until - Clock::now()).count();
      if (left <= 0 || ::poll(&p, 1, static_cast<int>(left)) <= 0) break;
      char b[4096];
      const ssize_t r = ::recv(fd_, b, std::min(sizeof b, n - out.size()), 0);
      if (r <= 0) break;
      out.append(b, static_cast<size_t>(r));
    }
    return out;
  }
  // Whether the server closed the connection within `timeout` (reads and drops anything before the close).
  bool closed_by_server(milliseconds timeout = milliseconds(3000)) {
    const auto until = in(timeout);
    while (Clock::now() < until) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      char b[256];
      const ssize_t r = ::recv(fd_, b, sizeof b, 0);
      if (r == 0 || (r < 0 && errno == ECONNRESET)) return true;
    }
    return false;
  }
  int fd() const { return fd_; }

 private:
  int fd_ = -1;
};

std::string hex(const std::string& bytes) {
  static const char digits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

std::string u64_bytes(uint64_t v) {
  std::string out;
  tcp_store::put_u64(&out, v);
  return out;
}

// --- the wire ---------------------------------------------------------------------------------------------

TEST(TcpStoreWire, EncodesAsTorchsClientDoes) {
  // Bytes torch 2.15's client sent for its first queries of init_process_group("gloo") (captured).
  EXPECT_EQ(hex(tcp_store::encode_validate() + tcp_store::encode_ping(0x3375)), "00cef7853c0d75330000");
  EXPECT_EQ(hex(tcp_store::encode_keys(QueryType::kWait, {"/0//cpu//0/0"})),
            "0601000000000000000c000000000000002f302f2f6370752f2f302f30");
  EXPECT_EQ(hex(tcp_store::encode_key(QueryType::kGet, "/0//cpu//0/0")),
            "030c000000000000002f302f2f6370752f2f302f30");
  EXPECT_EQ(hex(tcp_store::encode_add("k", -2)), "0401000000000000006bfeffffffffffffff");
}

TEST(TcpStoreWire, ParsesEveryRequestItEncodes) {
  struct Case {
    std::string bytes;
    QueryType type;
    std::vector<std::string> keys;
    std::vector<std::string> values;
    int64_t number;
  };
  const std::vector<Case> cases = {
      {tcp_store::encode_key_value(QueryType::kSet, "/k", std::string("v\0w", 3)), QueryType::kSet, {"/k"},
       {std::string("v\0w", 3)}, 0},
      {tcp_store::encode_compare_set("/k", "", "d"), QueryType::kCompareSet, {"/k"}, {"", "d"}, 0},
      {tcp_store::encode_add("/n", 42), QueryType::kAdd, {"/n"}, {}, 42},
      {tcp_store::encode_keys(QueryType::kCheck, {"/a", "/b"}), QueryType::kCheck, {"/a", "/b"}, {}, 0},
      {tcp_store::encode_multi_set({"/a", "/b"}, {"1", "2"}), QueryType::kMultiSet, {"/a", "/b"}, {"1", "2"}, 0},
      {tcp_store::encode_barrier("/b", 3), QueryType::kBarrier, {"/b"}, {}, 3},
      {tcp_store::encode_bare(QueryType::kGetNumKeys), QueryType::kGetNumKeys, {}, {}, 0},
      {tcp_store::encode_token("secret"), QueryType::kKoloToken, {"secret"}, {}, 0},
  };
  for (const Case& c : cases) {
    tcp_store::Request r;
    size_t consumed = 0, need = 0;
    std::string why;
    // Every proper prefix wants more, and says how much at least.
    for (size_t cut = 0; cut < c.bytes.size(); ++cut) {
      ASSERT_EQ(tcp_store::parse_request(c.bytes.data(), cut, &r, &consumed, &need, &why),
                tcp_store::ParseResult::kNeedMore)
          << tcp_store::query_name(c.type) << " cut at " << cut;
      EXPECT_GT(need, cut);
      EXPECT_LE(need, c.bytes.size());
    }
    const std::string two = c.bytes + c.bytes;  // the first of two back to back
    ASSERT_EQ(tcp_store::parse_request(two.data(), two.size(), &r, &consumed, &need, &why), tcp_store::ParseResult::kDone);
    EXPECT_EQ(consumed, c.bytes.size());
    EXPECT_EQ(r.type, c.type);
    EXPECT_EQ(r.keys, c.keys);
    EXPECT_EQ(r.values, c.values);
    EXPECT_EQ(r.number, c.number);
  }
}

TEST(TcpStoreWire, RefusesUnknownTypesAndOversizedArguments) {
  tcp_store::Request r;
  size_t consumed = 0, need = 0;
  std::string why;
  const std::string unknown(1, '\x42');
  EXPECT_EQ(tcp_store::parse_request(unknown.data(), 1, &r, &consumed, &need, &why), tcp_store::ParseResult::kMalformed);
  EXPECT_NE(why.find("66"), std::string::npos) << why;
  // A key's length past the limit is refused as soon as the length is read, before the key arrives.
  const std::string huge_key = std::string(1, char(QueryType::kGet)) + u64_bytes(tcp_store::kMaxKeyBytes + 1);
  EXPECT_EQ(tcp_store::parse_request(huge_key.data(), huge_key.size(), &r, &consumed, &need, &why),
            tcp_store::ParseResult::kMalformed);
  const std::string many = std::string(1, char(QueryType::kWait)) + u64_bytes(tcp_store::kMaxKeysPerQuery + 1);
  EXPECT_EQ(tcp_store::parse_request(many.data(), many.size(), &r, &consumed, &need, &why),
            tcp_store::ParseResult::kMalformed);
}

// --- client and server ------------------------------------------------------------------------------------

TEST(TcpStore, EveryCallWithExactValues) {
  auto server = serve();
  auto store = connect_to(server->port());
  EXPECT_EQ(store->where(), where(server->port()));
  const auto deadline = in(milliseconds(2000));

  ASSERT_TRUE(store->set("a", "hello").ok());
  std::string value;
  ASSERT_TRUE(store->get("a", deadline, &value).ok());
  EXPECT_EQ(value, "hello");
  const std::string binary("\0\xff\x01", 3);
  ASSERT_TRUE(store->set("bin", binary).ok());
  ASSERT_TRUE(store->get("bin", deadline, &value).ok());
  EXPECT_EQ(value, binary);
  ASSERT_TRUE(store->set("empty", "").ok());
  ASSERT_TRUE(store->get("empty", deadline, &value).ok());
  EXPECT_EQ(value, "");

  ASSERT_TRUE(store->append("a", " world").ok());
  ASSERT_TRUE(store->append("fresh", "x").ok());
  ASSERT_TRUE(store->get("a", deadline, &value).ok());
  EXPECT_EQ(value, "hello world");
  ASSERT_TRUE(store->get("fresh", deadline, &value).ok());
  EXPECT_EQ(value, "x");

  ASSERT_TRUE(store->multi_set({"m1", "m2"}, {"one", "two"}).ok());
  std::vector<std::string> values;
  ASSERT_TRUE(store->multi_get({"m2", "a", "m1"}, deadline, &values).ok());
  EXPECT_EQ(values, (std::vector<std::string>{"two", "hello world", "one"}));

  bool present = false;
  ASSERT_TRUE(store->check({"a", "m1"}, &present).ok());
  EXPECT_TRUE(present);
  ASSERT_TRUE(store->check({"a", "missing"}, &present).ok());
  EXPECT_FALSE(present);
  ASSERT_TRUE(store->wait({"a", "m2"}, deadline).ok());

  int64_t count = 0;
  ASSERT_TRUE(store->num_keys(&count).ok());
  EXPECT_EQ(count, 6);  // a, bin, empty, fresh, m1, m2
  bool deleted = false;
  ASSERT_TRUE(store->delete_key("a", &deleted).ok());
  EXPECT_TRUE(deleted);
  ASSERT_TRUE(store->delete_key("a", &deleted).ok());
  EXPECT_FALSE(deleted);
  ASSERT_TRUE(store->delete_key("bin", nullptr).ok());
  ASSERT_TRUE(store->num_keys(&count).ok());
  EXPECT_EQ(count, 4);
  EXPECT_TRUE(store->ping().ok());

  const Status multi = store->multi_set({"x"}, {});
  EXPECT_EQ(multi.code(), StatusCode::kInvalidArgument);
  const Status long_key = store->set(std::string(tcp_store::kMaxKeyBytes, 'k'), "v");
  EXPECT_EQ(long_key.code(), StatusCode::kInvalidArgument) << long_key.to_string();
  EXPECT_NE(long_key.message().find(where(server->port())), std::string::npos);
  EXPECT_TRUE(store->ping().ok());  // refused before sending: the connection is fine
}

TEST(TcpStore, AddCountsFromZeroAndStoresDecimal) {
  auto server = serve();
  auto store = connect_to(server->port());
  int64_t sum = 0;
  ASSERT_TRUE(store->add("n", 5, &sum).ok());
  EXPECT_EQ(sum, 5);
  ASSERT_TRUE(store->add("n", -7, &sum).ok());
  EXPECT_EQ(sum, -2);
  ASSERT_TRUE(store->add("n", 0, &sum).ok());
  EXPECT_EQ(sum, -2);
  std::string value;
  ASSERT_TRUE(store->get("n", in(milliseconds(1000)), &value).ok());
  EXPECT_EQ(value, "-2");
  ASSERT_TRUE(store->set("m", "40").ok());
  ASSERT_TRUE(store->add("m", 2, &sum).ok());
  EXPECT_EQ(sum, 42);

  // torch's servers drop a connection that adds to something else than an integer; so does kolo's.
  ASSERT_TRUE(store->set("text", "abc").ok());
  const Status s = store->add("text", 1, &sum);
  EXPECT_EQ(s.code(), StatusCode::kAborted) << s.to_string();
  EXPECT_NE(s.message().find("integer"), std::string::npos) << s.message();
  const Status after = store->ping();
  EXPECT_EQ(after.code(), StatusCode::kAborted);
  EXPECT_NE(after.message().find("connect a new client"), std::string::npos) << after.message();
}

TEST(TcpStore, CompareSetAsTorchsServer) {
  auto server = serve();
  auto store = connect_to(server->port());
  std::string current;
  // A missing key with an empty `expected` is created.
  ASSERT_TRUE(store->compare_set("k", "", "first", &current).ok());
  EXPECT_EQ(current, "first");
  // An existing key equal to `expected` is replaced; the reply is the new value.
  ASSERT_TRUE(store->compare_set("k", "first", "second", &current).ok());
  EXPECT_EQ(current, "second");
  // Not equal: unchanged, and the reply is the value it holds.
  ASSERT_TRUE(store->compare_set("k", "first", "third", &current).ok());
  EXPECT_EQ(current, "second");
  // A missing key with a non-empty `expected`: torch's reply is `expected` itself, and the key stays missing.
  ASSERT_TRUE(store->compare_set("missing", "guess", "new", &current).ok());
  EXPECT_EQ(current, "guess");
  bool present = true;
  ASSERT_TRUE(store->check({"missing"}, &present).ok());
  EXPECT_FALSE(present);
}

TEST(TcpStore, SeveralClientsAtOnce) {
  auto server = serve();
  constexpr int kClients = 8;
  constexpr int kAdds = 200;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int c = 0; c < kClients; ++c) {
    threads.emplace_back([&, c] {
      auto store = connect_to(server->port());
      int64_t sum = 0;
      for (int i = 0; i < kAdds; ++i) {
        if (!store->add("counter", 1, &sum).ok()) ++failures;
      }
      if (!store->set("done/" + std::to_string(c), std::to_string(c)).ok()) ++failures;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  auto store = connect_to(server->port());
  std::vector<std::string> keys;
  for (int c = 0; c < kClients; ++c) keys.push_back("done/" + std::to_string(c));
  std::vector<std::string> values;
  ASSERT_TRUE(store->multi_get(keys, in(milliseconds(2000)), &values).ok());
  for (int c = 0; c < kClients; ++c) EXPECT_EQ(values[c], std::to_string(c));
  int64_t sum = 0;
  ASSERT_TRUE(store->add("counter", 0, &sum).ok());
  EXPECT_EQ(sum, kClients * kAdds);
}

TEST(TcpStore, WaitsAreReleasedByAnotherClientsSet) {
  auto server = serve();
  constexpr int kWaiters = 4;
  std::vector<std::thread> threads;
  std::vector<Status> results(kWaiters);
  std::vector<double> took(kWaiters);
  std::vector<std::string> got(kWaiters);
  for (int w = 0; w < kWaiters; ++w) {
    threads.emplace_back([&, w] {
      auto store = connect_to(server->port());
      const auto start = Clock::now();
      // Half wait for one key, half for both (released only by the second set), and one reads it.
      if (w == 0) {
        results[w] = store->get("go", in(milliseconds(5000)), &got[w]);
      } else {
        results[w] = store->wait(w % 2 ? std::vector<std::string>{"go"} : std::vector<std::string>{"go", "later"},
                                 in(milliseconds(5000)));
      }
      took[w] = seconds_since(start);
    });
  }
  std::this_thread::sleep_for(milliseconds(300));
  auto setter = connect_to(server->port());
  ASSERT_TRUE(setter->set("go", "now").ok());
  std::this_thread::sleep_for(milliseconds(300));
  int64_t later = 0;
  ASSERT_TRUE(setter->add("later", 1, &later).ok());
  for (auto& t : threads) t.join();
  for (int w = 0; w < kWaiters; ++w) {
    EXPECT_TRUE(results[w].ok()) << w << ": " << results[w].to_string();
    EXPECT_GT(took[w], w % 2 || w == 0 ? 0.25 : 0.55) << w;
    EXPECT_LT(took[w], 3.0) << w;
  }
  EXPECT_EQ(got[0], "now");
}

TEST(TcpStore, GetOfAMissingKeyTimesOutAtItsDeadlineAndTheClientGoesOn) {
  auto server = serve();
  auto store = connect_to(server->port());
  const auto start = Clock::now();
  std::string value;
  const Status s = store->get("never/set", start + milliseconds(500), &value);
  const double took = seconds_since(start);
  EXPECT_EQ(s.code(), StatusCode::kTimeout) << s.to_string();
  EXPECT_GE(took, 0.5);
  EXPECT_LT(took, 1.5);
  EXPECT_NE(s.message().find("'never/set'"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find(where(server->port())), std::string::npos) << s.message();
  // The wait was cancelled on the server: the connection stays in step, and a later set releases no one.
  ASSERT_TRUE(store->set("never/set", "late").ok());
  ASSERT_TRUE(store->get("never/set", in(milliseconds(1000)), &value).ok());
  EXPECT_EQ(value, "late");
  // A deadline already past: one look, then Timeout.
  EXPECT_EQ(store->wait({"other"}, Clock::now() - milliseconds(1)).code(), StatusCode::kTimeout);
  EXPECT_TRUE(store->ping().ok());
}

TEST(TcpStore, ConnectToAPortNobodyServesFailsAtItsDeadline) {
  const int port = unused_port();
  std::unique_ptr<TcpStoreClient> store;
  const auto start = Clock::now();
  const Status s = TcpStoreClient::connect("127.0.0.1", port, "", start + milliseconds(700), &store);
  const double took = seconds_since(start);
  EXPECT_EQ(s.code(), StatusCode::kTimeout) << s.to_string();
  EXPECT_GE(took, 0.69);
  EXPECT_LT(took, 1.5);
  EXPECT_NE(s.message().find(where(port)), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("refused"), std::string::npos) << s.message();
  EXPECT_EQ(store, nullptr);
}

TEST(TcpStore, ConnectWaitsForAServerThatComesUpLate) {
  // The client starts first, as ranks do while rank 0 is still starting its server.
  std::unique_ptr<TcpStoreServer> server;
  int port = 0;
  for (int attempt = 0; attempt < 5 && server == nullptr; ++attempt) {
    port = unused_port();
    std::unique_ptr<TcpStoreClient> store;
    Status connected;
    std::thread client([&] { connected = TcpStoreClient::connect("127.0.0.1", port, "", in(milliseconds(5000)), &store); });
    std::this_thread::sleep_for(milliseconds(400));
    const Status s = TcpStoreServer::start("127.0.0.1", port, "", &server);
    if (!s.ok()) {  // someone took the port meanwhile: the client will time out; try another
      client.join();
      continue;
    }
    client.join();
    ASSERT_TRUE(connected.ok()) << connected.to_string();
    EXPECT_TRUE(store->set("k", "v").ok());
  }
  ASSERT_NE(server, nullptr);
  EXPECT_EQ(server->port(), port);
}

TEST(TcpStore, AServerStoppedMidWaitEndsTheWaitAtOnce) {
  auto server = serve();
  const int port = server->port();
  auto store = connect_to(port);
  Status s;
  double took = 0;
  std::thread waiter([&] {
    const auto start = Clock::now();
    s = store->wait({"never"}, start + milliseconds(10000));
    took = seconds_since(start);
  });
  std::this_thread::sleep_for(milliseconds(300));
  server->stop();
  waiter.join();
  EXPECT_EQ(s.code(), StatusCode::kAborted) << s.to_string();
  EXPECT_LT(took, 2.0);
  EXPECT_NE(s.message().find(where(port)), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("closed the connection"), std::string::npos) << s.message();
  server->stop();  // idempotent
}

TEST(TcpStore, AServerThatStopsAnsweringGivesTimeout) {
  // A listener that answers the handshake (VALIDATE, GETNUMKEYS) and then reads on in silence.
  const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(listener, 4), 0);
  socklen_t length = sizeof a;
  ::getsockname(listener, reinterpret_cast<sockaddr*>(&a), &length);
  const int port = ntohs(a.sin_port);
  std::atomic<bool> done{false};
  std::thread silent([&] {
    const int fd = ::accept(listener, nullptr, nullptr);
    char hello[6];
    size_t got = 0;
    while (got < sizeof hello) {
      const ssize_t r = ::recv(fd, hello + got, sizeof hello - got, 0);
      if (r <= 0) break;
      got += static_cast<size_t>(r);
    }
    const std::string no_keys = u64_bytes(0);
    ::send(fd, no_keys.data(), no_keys.size(), MSG_NOSIGNAL);
    char sink[256];
    while (!done.load()) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 50) > 0 && ::recv(fd, sink, sizeof sink, 0) <= 0) break;
    }
    ::close(fd);
  });
  auto store = connect_to(port);
  ASSERT_NE(store, nullptr);
  store->set_reply_timeout(milliseconds(300));
  const auto start = Clock::now();
  int64_t count = 0;
  const Status s = store->num_keys(&count);
  const double took = seconds_since(start);
  EXPECT_EQ(s.code(), StatusCode::kTimeout) << s.to_string();
  EXPECT_GE(took, 0.3);
  EXPECT_LT(took, 1.3);
  EXPECT_NE(s.message().find(where(port)), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("num_keys()"), std::string::npos) << s.message();
  // A reply may still come: the client refuses to go on out of step.
  const Status next = store->set("k", "v");
  EXPECT_EQ(next.code(), StatusCode::kAborted) << next.to_string();
  done = true;
  silent.join();
  ::close(listener);
}

// --- the token ----------------------------------------------------------------------------------------------

TEST(TcpStoreToken, OnlyAClientWithTheTokenIsServed) {
  auto server = serve("job-secret");
  const int port = server->port();
  std::unique_ptr<TcpStoreClient> store;

  Status s = TcpStoreClient::connect("127.0.0.1", port, "", in(milliseconds(2000)), &store);
  EXPECT_EQ(s.code(), StatusCode::kAborted) << s.to_string();
  EXPECT_NE(s.message().find(where(port)), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("token"), std::string::npos) << s.message();
  s = TcpStoreClient::connect("127.0.0.1", port, "job-secreT", in(milliseconds(2000)), &store);
  EXPECT_EQ(s.code(), StatusCode::kAborted) << s.to_string();
  EXPECT_NE(s.message().find("refused this job's token"), std::string::npos) << s.message();
  EXPECT_EQ(store, nullptr);

  auto good = connect_to(port, "job-secret");
  ASSERT_NE(good, nullptr);
  ASSERT_TRUE(good->set("k", "v").ok());
  std::string value;
  ASSERT_TRUE(good->get("k", in(milliseconds(1000)), &value).ok());
  EXPECT_EQ(value, "v");
  EXPECT_EQ(server->refused(), 2u);
}

TEST(TcpStoreToken, AStrangersRequestsAreClosedUnread) {
  auto server = serve("job-secret");
  const int port = server->port();
  {
    // torch's own client: VALIDATE and PING, no token. The connection closes, the PING unanswered.
    Raw torch_client(port);
    torch_client.send(tcp_store::encode_validate() + tcp_store::encode_ping(7));
    EXPECT_TRUE(torch_client.closed_by_server());
  }
  {
    // Validated, then a SET in the token's place: closed, and nothing set.
    Raw stranger(port);
    stranger.send(tcp_store::encode_validate() +
                  tcp_store::encode_key_value(QueryType::kSet, "/planted", "x"));
    EXPECT_TRUE(stranger.closed_by_server());
  }
  {
    // Not even VALIDATE first.
    Raw stranger(port);
    stranger.send(tcp_store::encode_key_value(QueryType::kSet, "/planted", "x"));
    EXPECT_TRUE(stranger.closed_by_server());
  }
  auto good = connect_to(port, "job-secret");
  bool present = true;
  ASSERT_TRUE(good->check({"planted"}, &present).ok());
  EXPECT_FALSE(present);
  EXPECT_EQ(server->refused(), 3u);
}

TEST(TcpStoreToken, AConnectionThatSaysNothingIsClosedAfterTheHandshakeTimeout) {
  TcpStoreServer::Options options;
  options.handshake_timeout = milliseconds(300);
  auto server = serve("job-secret", options);
  Raw silent(server->port());
  const auto start = Clock::now();
  EXPECT_TRUE(silent.closed_by_server(milliseconds(3000)));
  EXPECT_GE(seconds_since(start), 0.25);
  EXPECT_EQ(server->refused(), 1u);
  // Validated but no token: the same.
  Raw half(server->port());
  half.send(tcp_store::encode_validate());
  EXPECT_TRUE(half.closed_by_server(milliseconds(3000)));
  EXPECT_EQ(server->refused(), 2u);
}

// --- torch's client, as bytes -------------------------------------------------------------------------------

TEST(TcpStoreServerAsTorchsClientSeesIt, TheQueriesOfInitProcessGroup) {
  auto server = serve();
  Raw rank0(server->port());
  Raw rank1(server->port());
  // Each rank validates and pings in one write; the nonce comes back.
  rank0.send(tcp_store::encode_validate() + tcp_store::encode_ping(0x3375));
  EXPECT_EQ(hex(rank0.recv(4)), "75330000");
  rank1.send(tcp_store::encode_validate() + tcp_store::encode_ping(0x3376));
  EXPECT_EQ(hex(rank1.recv(4)), "76330000");
  // Rank 0 publishes its address, then waits for rank 1's (not there yet: no reply).
  const std::string address0(170, '\xaa');
  rank0.send(tcp_store::encode_key_value(QueryType::kSet, "/0//cpu//0/0", address0));
  rank0.send(tcp_store::encode_keys(QueryType::kWait, {"/0//cpu//0/1"}));
  EXPECT_EQ(rank0.recv(1, milliseconds(200)), "");
  // Rank 1 sends its SET a byte at a time, as a slow network might deliver it: rank 0's wait ends.
  const std::string set1 = tcp_store::encode_key_value(QueryType::kSet, "/0//cpu//0/1", std::string(170, '\xbb'));
  for (char c : set1) rank1.send(std::string(1, c));
  EXPECT_EQ(hex(rank0.recv(1)), "00");  // STOP_WAITING
  rank0.send(tcp_store::encode_key(QueryType::kGet, "/0//cpu//0/1"));
  EXPECT_EQ(rank0.recv(8 + 170), u64_bytes(170) + std::string(170, '\xbb'));
  rank1.send(tcp_store::encode_keys(QueryType::kWait, {"/0//cpu//0/0"}) +
             tcp_store::encode_key(QueryType::kGet, "/0//cpu//0/0"));  // two in one write
  EXPECT_EQ(hex(rank1.recv(1)), "00");
  EXPECT_EQ(rank1.recv(8 + 170), u64_bytes(170) + address0);
}

TEST(TcpStoreServerAsTorchsClientSeesIt, CancelWaitQueuesListKeysAndBarrier) {
  auto server = serve();
  Raw a(server->port());
  Raw b(server->port());
  a.send(tcp_store::encode_validate());
  b.send(tcp_store::encode_validate());
  // A wait that times out on the client: CANCEL_WAIT, answered WAIT_CANCELED; a later SET sends nothing.
  a.send(tcp_store::encode_keys(QueryType::kWait, {"/x"}));
  a.send(tcp_store::encode_bare(QueryType::kCancelWait));
  EXPECT_EQ(hex(a.recv(1)), "01");
  b.send(tcp_store::encode_key_value(QueryType::kSet, "/x", "1") + tcp_store::encode_ping(1));
  EXPECT_EQ(b.recv(4).size(), 4u);  // b's SET served before a asks
  a.send(tcp_store::encode_bare(QueryType::kGetNumKeys));
  EXPECT_EQ(a.recv(8), u64_bytes(1));  // the count, with no STOP_WAITING before it
  // Queues: length before the pop, then the value; a wait on a queue ends at its push.
  a.send(tcp_store::encode_keys(QueryType::kWait, {"/q"}));
  b.send(tcp_store::encode_key_value(QueryType::kQueuePush, "/q", "one") +
         tcp_store::encode_key_value(QueryType::kQueuePush, "/q", "two") + tcp_store::encode_ping(2));
  EXPECT_EQ(b.recv(4).size(), 4u);
  EXPECT_EQ(hex(a.recv(1)), "00");
  a.send(tcp_store::encode_key(QueryType::kQueueLen, "/q"));
  EXPECT_EQ(a.recv(8), u64_bytes(2));
  a.send(tcp_store::encode_key(QueryType::kQueuePop, "/q"));
  EXPECT_EQ(a.recv(8 + 8 + 3), u64_bytes(2) + u64_bytes(3) + "one");
  a.send(tcp_store::encode_key(QueryType::kQueuePop, "/q") + tcp_store::encode_key(QueryType::kQueuePop, "/q"));
  EXPECT_EQ(a.recv(8 + 8 + 3 + 8), u64_bytes(1) + u64_bytes(3) + "two" + u64_bytes(0));
  // LIST_KEYS: the count, then each key.
  a.send(tcp_store::encode_bare(QueryType::kListKeys));
  EXPECT_EQ(a.recv(8 + 8 + 2), u64_bytes(1) + u64_bytes(2) + "/x");
  // BARRIER of 2: the first waits, the second releases both.
  a.send(tcp_store::encode_barrier("/bar", 2));
  EXPECT_EQ(a.recv(1, milliseconds(200)), "");
  b.send(tcp_store::encode_barrier("/bar", 2));
  EXPECT_EQ(hex(b.recv(1)), "00");
  EXPECT_EQ(hex(a.recv(1)), "00");
  // A request past the limits closes the connection (as torch's libuv server does).
  b.send(std::string(1, char(QueryType::kGet)) + u64_bytes(tcp_store::kMaxKeyBytes + 1));
  EXPECT_TRUE(b.closed_by_server());
  a.send(tcp_store::encode_bare(QueryType::kGetNumKeys));
  EXPECT_EQ(a.recv(8), u64_bytes(2));  // "/x" and "/bar"; the other connection's end changed nothing
}

TEST(TcpStore, ALargeValueRoundTrips) {
  auto server = serve();
  auto store = connect_to(server->port());
  std::string big(tcp_store::kMaxValueBytes, 'x');
  for (size_t i = 0; i < big.size(); i += 4093) big[i] = static_cast<char>(i);
  ASSERT_TRUE(store->set("big", big).ok());
  std::string value;
  ASSERT_TRUE(store->get("big", in(milliseconds(5000)), &value).ok());
  EXPECT_EQ(value, big);
  EXPECT_EQ(store->set("bigger", big + "y").code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace kolo
