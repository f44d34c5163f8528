// kolo's TCPStore (store/): its client against its server, call by call with exact values; the waits
// (released by another client, bounded by their deadlines, cut short by a server that stops). The same
// client and server against torch's own: tests/system/gloo.
#include "tcp_store_test_util.h"

namespace kolo {
namespace {

using namespace store_test;  // NOLINT: this suite's own helpers
using tcp_store::QueryType;

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

// A held key ("/held/" in its name) goes with the connection that last set it: a killed process's liveness.
TEST(TcpStore, AHeldKeyGoesWithTheConnectionThatSetIt) {
  auto server = serve();
  auto watcher = connect_to(server->port());
  auto gone_soon = [&](const char* key) {
    const auto deadline = in(milliseconds(2000));
    bool present = true;
    while (present && Clock::now() < deadline) EXPECT_TRUE(watcher->check({key}, &present).ok());
    return !present;
  };
  auto present = [&](const char* key) {
    bool here = false;
    EXPECT_TRUE(watcher->check({key}, &here).ok());
    return here;
  };
  auto process = connect_to(server->port());
  ASSERT_TRUE(process->set("job/held/live/1", "1").ok());
  ASSERT_TRUE(process->multi_set({"job/plain", "job/held/live/2"}, {"1", "1"}).ok());
  auto other = connect_to(server->port());
  ASSERT_TRUE(other->set("job/held/live/2", "2").ok());  // now the other's
  other.reset();
  EXPECT_TRUE(gone_soon("job/held/live/2"));
  EXPECT_TRUE(present("job/held/live/1"));  // its connection is open
  process.reset();
  EXPECT_TRUE(gone_soon("job/held/live/1"));
  EXPECT_TRUE(present("job/plain"));
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

TEST(TcpStore, AServerOnAPortInUseSaysWhichAndWhy) {
  auto first = serve();
  std::unique_ptr<TcpStoreServer> second;
  const Status s = TcpStoreServer::start("127.0.0.1", first->port(), "", &second);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find(where(first->port())), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("in use"), std::string::npos) << s.message();
  EXPECT_EQ(second, nullptr);
  EXPECT_EQ(TcpStoreServer::start("", 0, "", &second).code(), StatusCode::kInvalidArgument);
}

TEST(TcpStore, AddWrapsAroundAsTorchsServerDoes) {
  auto server = serve();
  auto store = connect_to(server->port());
  int64_t sum = 0;
  ASSERT_TRUE(store->set("n", "9223372036854775807").ok());
  ASSERT_TRUE(store->add("n", 1, &sum).ok());
  EXPECT_EQ(sum, INT64_MIN);
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
