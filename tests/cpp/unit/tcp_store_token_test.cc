// kolo's TCPStore server (store/tcp_store_server.h): the job's token (only a client that brings it is
// served; a stranger's connection is closed unread, one that says nothing too, after the handshake timeout),
// and the server fed the exact bytes torch 2.x's client sends, byte by byte too.
#include "tcp_store_test_util.h"

namespace kolo {
namespace {

using namespace store_test;  // NOLINT: this suite's own helpers
using tcp_store::QueryType;

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

TEST(TcpStoreToken, WithoutATokenVALIDATEAloneOpensAConnection) {
  auto server = serve();
  {
    Raw wrong_magic(server->port());
    std::string validate = tcp_store::encode_validate();
    validate[1] ^= 1;
    wrong_magic.send(validate + tcp_store::encode_bare(QueryType::kGetNumKeys));
    EXPECT_TRUE(wrong_magic.closed_by_server());
  }
  {
    Raw no_validate(server->port());
    no_validate.send(tcp_store::encode_bare(QueryType::kGetNumKeys));
    EXPECT_TRUE(no_validate.closed_by_server());
  }
  Raw torch_client(server->port());
  torch_client.send(tcp_store::encode_validate() + tcp_store::encode_bare(QueryType::kGetNumKeys));
  EXPECT_EQ(torch_client.recv(8), u64_bytes(0));
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


}  // namespace
}  // namespace kolo
