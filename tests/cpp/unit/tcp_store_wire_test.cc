// The bytes of torch's TCPStore protocol as kolo's store writes and reads them (store/tcp_store_wire.h).
#include "tcp_store_test_util.h"

namespace kolo {
namespace {

using namespace store_test;  // NOLINT: this suite's own helpers
using tcp_store::QueryType;

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

}  // namespace
}  // namespace kolo
