#include "store/tcp_store_wire.h"

#include <string>

namespace kolo {
namespace tcp_store {
namespace {

// A cursor over received bytes that remembers, when it runs out, how far it would have needed to read.
class Cursor {
 public:
  Cursor(const char* data, size_t size) : data_(data), size_(size) {}

  bool u8(uint8_t* v) {
    if (!have(1)) return false;
    *v = static_cast<uint8_t>(data_[at_]);
    at_ += 1;
    return true;
  }
  bool u32(uint32_t* v) {
    if (!have(4)) return false;
    *v = get_u32(data_ + at_);
    at_ += 4;
    return true;
  }
  bool u64(uint64_t* v) {
    if (!have(8)) return false;
    *v = get_u64(data_ + at_);
    at_ += 8;
    return true;
  }
  bool i64(int64_t* v) {
    if (!have(8)) return false;
    *v = get_i64(data_ + at_);
    at_ += 8;
    return true;
  }
  // A length-prefixed string of at most `limit` bytes; past it, `*too_long` and false.
  bool bytes(std::string* v, size_t limit, bool* too_long) {
    uint64_t length = 0;
    if (!u64(&length)) return false;
    if (length > limit) {
      *too_long = true;
      return false;
    }
    if (!have(static_cast<size_t>(length))) return false;
    v->assign(data_ + at_, static_cast<size_t>(length));
    at_ += static_cast<size_t>(length);
    return true;
  }

  size_t at() const { return at_; }
  size_t need() const { return need_; }

 private:
  bool have(size_t n) {
    if (size_ - at_ >= n) return true;
    need_ = at_ + n;
    return false;
  }

  const char* data_;
  size_t size_;
  size_t at_ = 0;
  size_t need_ = 0;
};

// Whether `type` is one of torch's queries or kolo's token.
bool known(uint8_t type) {
  return type <= static_cast<uint8_t>(QueryType::kBarrier) || type == static_cast<uint8_t>(QueryType::kKoloToken);
}

}  // namespace

const char* query_name(QueryType type) {
  switch (type) {
    case QueryType::kValidate: return "VALIDATE";
    case QueryType::kSet: return "SET";
    case QueryType::kCompareSet: return "COMPARE_SET";
    case QueryType::kGet: return "GET";
    case QueryType::kAdd: return "ADD";
    case QueryType::kCheck: return "CHECK";
    case QueryType::kWait: return "WAIT";
    case QueryType::kGetNumKeys: return "GETNUMKEYS";
    case QueryType::kDeleteKey: return "DELETE_KEY";
    case QueryType::kAppend: return "APPEND";
    case QueryType::kMultiGet: return "MULTI_GET";
    case QueryType::kMultiSet: return "MULTI_SET";
    case QueryType::kCancelWait: return "CANCEL_WAIT";
    case QueryType::kPing: return "PING";
    case QueryType::kQueuePush: return "QUEUE_PUSH";
    case QueryType::kQueuePop: return "QUEUE_POP";
    case QueryType::kQueueLen: return "QUEUE_LEN";
    case QueryType::kListKeys: return "LIST_KEYS";
    case QueryType::kBarrier: return "BARRIER";
    case QueryType::kKoloToken: return "KOLO_TOKEN";
  }
  return "UNKNOWN";
}

void put_u8(std::string* out, uint8_t value) { out->push_back(static_cast<char>(value)); }

void put_u32(std::string* out, uint32_t value) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

void put_u64(std::string* out, uint64_t value) {
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

void put_i64(std::string* out, int64_t value) { put_u64(out, static_cast<uint64_t>(value)); }

void put_bytes(std::string* out, const std::string& bytes) {
  put_u64(out, bytes.size());
  out->append(bytes);
}

uint32_t get_u32(const char* data) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(static_cast<uint8_t>(data[i])) << (8 * i);
  return v;
}

uint64_t get_u64(const char* data) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(static_cast<uint8_t>(data[i])) << (8 * i);
  return v;
}

int64_t get_i64(const char* data) { return static_cast<int64_t>(get_u64(data)); }

std::string encode_validate() {
  std::string out;
  put_u8(&out, static_cast<uint8_t>(QueryType::kValidate));
  put_u32(&out, kValidationMagic);
  return out;
}

std::string encode_token(const std::string& token) { return encode_key(QueryType::kKoloToken, token); }

std::string encode_ping(uint32_t nonce) {
  std::string out;
  put_u8(&out, static_cast<uint8_t>(QueryType::kPing));
  put_u32(&out, nonce);
  return out;
}

std::string encode_bare(QueryType type) {
  std::string out;
  put_u8(&out, static_cast<uint8_t>(type));
  return out;
}

std::string encode_key(QueryType type, const std::string& key) {
  std::string out = encode_bare(type);
  put_bytes(&out, key);
  return out;
}

std::string encode_key_value(QueryType type, const std::string& key, const std::string& value) {
  std::string out = encode_key(type, key);
  put_bytes(&out, value);
  return out;
}

std::string encode_keys(QueryType type, const std::vector<std::string>& keys) {
  std::string out = encode_bare(type);
  put_u64(&out, keys.size());
  for (const std::string& key : keys) put_bytes(&out, key);
  return out;
}

std::string encode_multi_set(const std::vector<std::string>& keys, const std::vector<std::string>& values) {
  std::string out = encode_bare(QueryType::kMultiSet);
  put_i64(&out, static_cast<int64_t>(keys.size()));
  for (size_t i = 0; i < keys.size(); ++i) {
    put_bytes(&out, keys[i]);
    put_bytes(&out, i < values.size() ? values[i] : std::string());
  }
  return out;
}

std::string encode_compare_set(const std::string& key, const std::string& expected, const std::string& desired) {
  std::string out = encode_key_value(QueryType::kCompareSet, key, expected);
  put_bytes(&out, desired);
  return out;
}

std::string encode_add(const std::string& key, int64_t delta) {
  std::string out = encode_key(QueryType::kAdd, key);
  put_i64(&out, delta);
  return out;
}

std::string encode_barrier(const std::string& key, int64_t world_size) {
  std::string out = encode_key(QueryType::kBarrier, key);
  put_i64(&out, world_size);
  return out;
}

ParseResult parse_request(const char* data, size_t size, Request* request, size_t* consumed, size_t* need,
                          std::string* why) {
  Cursor in(data, size);
  bool too_long = false;
  const auto need_more = [&] {
    if (too_long) {
      *why = "an argument longer than the store takes (keys " + std::to_string(kMaxKeyBytes) + " bytes, values " +
             std::to_string(kMaxValueBytes) + ")";
      return ParseResult::kMalformed;
    }
    *need = in.need();
    return ParseResult::kNeedMore;
  };
  const auto key = [&](std::string* k) { return in.bytes(k, kMaxKeyBytes, &too_long); };
  const auto value = [&](std::string* v) { return in.bytes(v, kMaxValueBytes, &too_long); };
  // A count of keys, then that many keys (and values, for MULTI_SET).
  const auto counted = [&](bool with_values) -> ParseResult {
    uint64_t n = 0;
    if (!in.u64(&n)) return need_more();
    if (n > kMaxKeysPerQuery) {
      *why = std::to_string(n) + " keys in one query, more than " + std::to_string(kMaxKeysPerQuery);
      return ParseResult::kMalformed;
    }
    request->keys.resize(n);
    if (with_values) request->values.resize(n);
    for (uint64_t i = 0; i < n; ++i) {
      if (!key(&request->keys[i])) return need_more();
      if (with_values && !value(&request->values[i])) return need_more();
    }
    return ParseResult::kDone;
  };

  uint8_t type = 0;
  if (!in.u8(&type)) return need_more();
  if (!known(type)) {
    *why = "unknown query type " + std::to_string(type);
    return ParseResult::kMalformed;
  }
  request->type = static_cast<QueryType>(type);
  request->keys.clear();
  request->values.clear();
  request->number = 0;
  request->word = 0;

  ParseResult result = ParseResult::kDone;
  switch (request->type) {
    case QueryType::kValidate:
    case QueryType::kPing:
      if (!in.u32(&request->word)) return need_more();
      break;
    case QueryType::kKoloToken:
      request->keys.resize(1);
      if (!in.bytes(&request->keys[0], kMaxTokenBytes, &too_long)) return need_more();
      break;
    case QueryType::kGet:
    case QueryType::kDeleteKey:
    case QueryType::kQueuePop:
    case QueryType::kQueueLen:
      request->keys.resize(1);
      if (!key(&request->keys[0])) return need_more();
      break;
    case QueryType::kSet:
    case QueryType::kAppend:
    case QueryType::kQueuePush:
      request->keys.resize(1);
      request->values.resize(1);
      if (!key(&request->keys[0]) || !value(&request->values[0])) return need_more();
      break;
    case QueryType::kCompareSet:
      request->keys.resize(1);
      request->values.resize(2);
      if (!key(&request->keys[0]) || !value(&request->values[0]) || !value(&request->values[1])) return need_more();
      break;
    case QueryType::kAdd:
    case QueryType::kBarrier:
      request->keys.resize(1);
      if (!key(&request->keys[0]) || !in.i64(&request->number)) return need_more();
      break;
    case QueryType::kCheck:
    case QueryType::kWait:
    case QueryType::kMultiGet:
      result = counted(false);
      break;
    case QueryType::kMultiSet:
      result = counted(true);
      break;
    case QueryType::kGetNumKeys:
    case QueryType::kCancelWait:
    case QueryType::kListKeys:
      break;
  }
  if (result == ParseResult::kDone) *consumed = in.at();
  return result;
}

}  // namespace tcp_store
}  // namespace kolo
