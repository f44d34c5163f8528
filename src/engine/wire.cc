#include "engine/wire.h"

#include <cmath>
#include <cstdint>
#include <cstring>

namespace kolo {
namespace {

// Little-endian, fixed width; every message starts with a tag and a format version.
constexpr uint8_t kRequestTag = 0x51;   // 'Q'
constexpr uint8_t kResponseTag = 0x52;  // 'R'
constexpr uint8_t kVersion = 2;  // 2: compression
constexpr uint32_t kMaxDims = 64;

class Writer {
 public:
  void u8(uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void u32(uint32_t v) { raw(&v, sizeof v); }
  void i32(int32_t v) { raw(&v, sizeof v); }
  void i64(int64_t v) { raw(&v, sizeof v); }
  void f64(double v) { raw(&v, sizeof v); }
  void str(const std::string& s) {
    u32(static_cast<uint32_t>(s.size()));
    out_.append(s);
  }
  void dims(const std::vector<int64_t>& d) {
    u32(static_cast<uint32_t>(d.size()));
    for (int64_t v : d) i64(v);
  }
  std::string take() { return std::move(out_); }

 private:
  void raw(const void* p, size_t n) { out_.append(static_cast<const char*>(p), n); }
  std::string out_;
};

class Reader {
 public:
  explicit Reader(const std::string& s) : p_(s.data()), left_(s.size()) {}

  bool u8(uint8_t* v) { return raw(v, 1); }
  bool u32(uint32_t* v) { return raw(v, sizeof *v); }
  bool i32(int32_t* v) { return raw(v, sizeof *v); }
  bool i64(int64_t* v) { return raw(v, sizeof *v); }
  bool f64(double* v) { return raw(v, sizeof *v) && std::isfinite(*v); }
  bool str(std::string* s) {
    uint32_t n;
    if (!u32(&n) || n > left_) return false;
    s->assign(p_, n);
    p_ += n;
    left_ -= n;
    return true;
  }
  // Dimensions are counts: never negative, and few.
  bool dims(std::vector<int64_t>* d, uint32_t max_count) {
    uint32_t n;
    if (!u32(&n) || n > max_count || n > left_ / sizeof(int64_t)) return false;
    d->resize(n);
    for (auto& v : *d) {
      if (!i64(&v) || v < 0) return false;
    }
    return true;
  }
  // A shape: dimensions whose product (the element count) fits in int64.
  bool shape(std::vector<int64_t>* d) {
    if (!dims(d, kMaxDims)) return false;
    int64_t n = 1;
    for (int64_t v : *d) {
      if (__builtin_mul_overflow(n, v, &n)) return false;
    }
    return true;
  }
  template <typename E>
  bool enumeration(E* e, int count) {
    uint8_t v;
    if (!u8(&v) || v >= count) return false;
    *e = static_cast<E>(v);
    return true;
  }
  template <typename E>
  bool enumeration32(E* e, int count) {
    int32_t v;
    if (!i32(&v) || v < 0 || v >= count) return false;
    *e = static_cast<E>(v);
    return true;
  }
  bool done() const { return left_ == 0; }
  size_t left() const { return left_; }

 private:
  bool raw(void* v, size_t n) {
    if (left_ < n) return false;
    std::memcpy(v, p_, n);
    p_ += n;
    left_ -= n;
    return true;
  }
  const char* p_;
  size_t left_;
};

void write_header(Writer& w, uint8_t tag, size_t count) {
  w.u8(tag);
  w.u8(kVersion);
  w.u32(static_cast<uint32_t>(count));
}

Status read_header(Reader& r, uint8_t tag, size_t min_item_bytes, uint32_t* count) {
  uint8_t t = 0, v = 0;
  if (!r.u8(&t) || t != tag) return Status::Internal("negotiation message has the wrong tag");
  if (!r.u8(&v)) return Status::Internal("negotiation message ends before its version");
  if (v != kVersion) {
    return Status::Internal("negotiation message has format version " + std::to_string(v) +
                            ", this kolo speaks " + std::to_string(kVersion) +
                            ": are all ranks running the same kolo build?");
  }
  if (!r.u32(count) || *count > r.left() / min_item_bytes) {
    return Status::Internal("negotiation message claims more items than it holds");
  }
  return Status::OK();
}

constexpr int kNumDeviceTypes = 2;
constexpr int kNumStatusCodes = 8;
constexpr size_t kMinRequestBytes = 4 + 4 + 1 + 4 + 1 + 1 + 4 + 8 + 8 + 1 + 4 + 8;
constexpr size_t kMinResponseBytes = 1 + 4 + 1 + 4 + 1 + 1 + 4 + 8 + 8 + 1 + 4 + 4 + 4 + 4 + 1;

}  // namespace

std::string encode_requests(const std::vector<Request>& requests) {
  Writer w;
  write_header(w, kRequestTag, requests.size());
  for (const Request& q : requests) {
    w.str(q.name);
    w.i32(q.rank);
    w.u8(static_cast<uint8_t>(q.kind));
    w.i32(static_cast<int32_t>(q.dtype));
    w.u8(static_cast<uint8_t>(q.device));
    w.u8(static_cast<uint8_t>(q.reduce_op));
    w.i32(q.root);
    w.f64(q.prescale);
    w.f64(q.postscale);
    w.u8(static_cast<uint8_t>(q.compression));
    w.dims(q.shape);
    w.f64(q.waited_seconds);
  }
  return w.take();
}

Status decode_requests(const std::string& bytes, std::vector<Request>* requests) {
  Reader r(bytes);
  uint32_t count;
  Status s = read_header(r, kRequestTag, kMinRequestBytes, &count);
  if (!s.ok()) return s;
  requests->clear();
  requests->reserve(count);
  for (uint32_t i = 0; i < count; ++i) {
    Request q;
    const bool ok = r.str(&q.name) && r.i32(&q.rank) && q.rank >= 0 &&
                    r.enumeration(&q.kind, kNumOpKinds) &&
                    r.enumeration32(&q.dtype, kNumDataTypes) &&
                    r.enumeration(&q.device, kNumDeviceTypes) &&
                    r.enumeration(&q.reduce_op, kNumReduceOps) && r.i32(&q.root) &&
                    r.f64(&q.prescale) && r.f64(&q.postscale) &&
                    r.enumeration(&q.compression, kNumCompressions) && r.shape(&q.shape) &&
                    r.f64(&q.waited_seconds);
    if (!ok) return Status::Internal("malformed request #" + std::to_string(i) + " in negotiation message");
    requests->push_back(std::move(q));
  }
  if (!r.done()) return Status::Internal("negotiation message has trailing bytes");
  return Status::OK();
}

std::string encode_responses(const std::vector<Response>& responses) {
  Writer w;
  write_header(w, kResponseTag, responses.size());
  for (const Response& p : responses) {
    w.u8(static_cast<uint8_t>(p.type));
    w.str(p.name);
    w.u8(static_cast<uint8_t>(p.kind));
    w.i32(static_cast<int32_t>(p.dtype));
    w.u8(static_cast<uint8_t>(p.device));
    w.u8(static_cast<uint8_t>(p.reduce_op));
    w.i32(p.root);
    w.f64(p.prescale);
    w.f64(p.postscale);
    w.u8(static_cast<uint8_t>(p.compression));
    w.dims(p.shape);
    w.dims(p.first_dims);
    w.i32(p.contributors);
    w.str(p.error);
    w.u8(static_cast<uint8_t>(p.error_code));
  }
  return w.take();
}

Status decode_responses(const std::string& bytes, std::vector<Response>* responses) {
  Reader r(bytes);
  uint32_t count;
  Status s = read_header(r, kResponseTag, kMinResponseBytes, &count);
  if (!s.ok()) return s;
  responses->clear();
  responses->reserve(count);
  for (uint32_t i = 0; i < count; ++i) {
    Response p;
    const bool ok = r.enumeration(&p.type, 2) && r.str(&p.name) &&
                    r.enumeration(&p.kind, kNumOpKinds) &&
                    r.enumeration32(&p.dtype, kNumDataTypes) &&
                    r.enumeration(&p.device, kNumDeviceTypes) &&
                    r.enumeration(&p.reduce_op, kNumReduceOps) && r.i32(&p.root) &&
                    r.f64(&p.prescale) && r.f64(&p.postscale) &&
                    r.enumeration(&p.compression, kNumCompressions) && r.shape(&p.shape) &&
                    r.dims(&p.first_dims, UINT32_MAX) && r.i32(&p.contributors) && p.contributors >= 0 &&
                    r.str(&p.error) &&
                    r.enumeration(&p.error_code, kNumStatusCodes);
    if (!ok) {
      return Status::Internal("malformed response #" + std::to_string(i) + " in negotiation message");
    }
    responses->push_back(std::move(p));
  }
  if (!r.done()) return Status::Internal("negotiation message has trailing bytes");
  return Status::OK();
}

}  // namespace kolo
