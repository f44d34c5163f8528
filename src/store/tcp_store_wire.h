// The bytes of PyTorch's c10d TCPStore protocol (torch 2.x, the query numbering of torch 2.15), shared by
// kolo's store client and server so that each speaks to torch's other half: a torch script's
// TCPStore(is_master=False) to kolo's server, kolo's client to the store torchrun's agent serves.
//
// A request is one query-type byte and its arguments; a reply has no header at all, its shape is known
// from the request. Strings and byte strings go as a 64-bit length and the bytes; integers in the byte order
// of torch's hosts (torch copies them from memory; every platform torch ships for is little-endian, and kolo
// writes little-endian explicitly). A connection's first request is VALIDATE with a magic number and no
// reply; kolo adds one query of its own (kKoloToken) that its server wants next where it has a token.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace kolo {
namespace tcp_store {

constexpr uint32_t kValidationMagic = 0x3C85F7CE;

// torch's QueryType, in its order: the values are the wire's.
enum class QueryType : uint8_t {
  kValidate = 0,     // u32 magic; no reply
  kSet = 1,          // key, value; no reply
  kCompareSet = 2,   // key, expected, desired; reply: value
  kGet = 3,          // key; reply: value
  kAdd = 4,          // key, i64 delta; reply: i64 sum
  kCheck = 5,        // u64 n, n keys; reply: u8 CheckReply
  kWait = 6,         // u64 n, n keys; reply: u8 WaitReply, once every key exists
  kGetNumKeys = 7,   // reply: i64
  kDeleteKey = 8,    // key; reply: i64 keys deleted
  kAppend = 9,       // key, value; no reply
  kMultiGet = 10,    // u64 n, n keys; reply: n values
  kMultiSet = 11,    // i64 n, n (key, value); no reply
  kCancelWait = 12,  // reply: u8 kWaitCanceled
  kPing = 13,        // u32 nonce; reply: the nonce
  kQueuePush = 14,   // key, value; no reply
  kQueuePop = 15,    // key; reply: i64 length before the pop, then the value where it was not empty
  kQueueLen = 16,    // key; reply: i64
  kListKeys = 17,    // reply: i64 n, n keys
  kBarrier = 18,     // key, i64 world size; reply: u8 kStopWaiting once that many have arrived
  // kolo's own, past torch's range ('k'): the job's token, right after VALIDATE, where the server has one.
  kKoloToken = 0x6b,
};

enum class CheckReply : uint8_t { kReady = 0, kNotReady = 1 };
enum class WaitReply : uint8_t { kStopWaiting = 0, kWaitCanceled = 1 };

// torch's libuv server closes a connection past these; kolo's server does too, and kolo's client refuses
// such a call before sending it.
constexpr size_t kMaxKeyBytes = 8 * 1024;
constexpr size_t kMaxValueBytes = 8 * 1024 * 1024;
constexpr size_t kMaxKeysPerQuery = 128 * 1024;
constexpr size_t kMaxTokenBytes = 1024;

const char* query_name(QueryType type);

// Appending integers and length-prefixed strings to an outgoing buffer.
void put_u8(std::string* out, uint8_t value);
void put_u32(std::string* out, uint32_t value);
void put_u64(std::string* out, uint64_t value);
void put_i64(std::string* out, int64_t value);
void put_bytes(std::string* out, const std::string& bytes);  // u64 length, then the bytes

// Reading integers from received bytes (the caller has checked there are enough).
uint32_t get_u32(const char* data);
uint64_t get_u64(const char* data);
int64_t get_i64(const char* data);

// Requests, as a client sends them.
std::string encode_validate();
std::string encode_token(const std::string& token);
std::string encode_ping(uint32_t nonce);
std::string encode_bare(QueryType type);  // GETNUMKEYS, CANCEL_WAIT, LIST_KEYS
std::string encode_key(QueryType type, const std::string& key);  // GET, DELETE_KEY, QUEUE_POP, QUEUE_LEN
std::string encode_key_value(QueryType type, const std::string& key, const std::string& value);  // SET, APPEND, QUEUE_PUSH
std::string encode_keys(QueryType type, const std::vector<std::string>& keys);  // CHECK, WAIT, MULTI_GET
std::string encode_multi_set(const std::vector<std::string>& keys, const std::vector<std::string>& values);
std::string encode_compare_set(const std::string& key, const std::string& expected, const std::string& desired);
std::string encode_add(const std::string& key, int64_t delta);
std::string encode_barrier(const std::string& key, int64_t world_size);

// A request as a server reads it: which arguments are filled depends on the type.
struct Request {
  QueryType type = QueryType::kValidate;
  std::vector<std::string> keys;    // one for the single-key queries
  std::vector<std::string> values;  // SET, APPEND, QUEUE_PUSH: one; COMPARE_SET: expected, desired; MULTI_SET
  int64_t number = 0;               // ADD's delta, BARRIER's world size
  uint32_t word = 0;                // VALIDATE's magic, PING's nonce
};

enum class ParseResult { kNeedMore, kDone, kMalformed };

// Reads one request from the front of `data`. kDone: `*request` filled, `*consumed` its bytes.
// kNeedMore: the request is not all there; `*need` is how many bytes of `data` the next try needs at
// least (so a large value arriving in pieces is not parsed again at each piece). kMalformed: an unknown
// type or an argument past the limits above, said in `*why`; the connection cannot be read further.
ParseResult parse_request(const char* data, size_t size, Request* request, size_t* consumed, size_t* need,
                          std::string* why);

}  // namespace tcp_store
}  // namespace kolo
