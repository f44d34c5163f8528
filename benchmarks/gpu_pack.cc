// Packing ResNet-50's gradients (161 float32 tensors, 102 MB) into one buffer on the GPU and back
// out, as kolo's fused allreduce does (one batched copy for every tensor, each at a 16-byte aligned
// offset), against one device-to-device copy of all the bytes (the bound) and one copy per tensor
// (a loop of cudaMemcpyAsync); and the pack with the cast to float16 (compression) against the same
// cast of one buffer of those bytes.
//
//   gpu_pack [--device cuda|double] [--reps N] [--rounds N] [--json out.json]
//
// A row's time lies between device events around --reps repetitions on one stream (so a launch the
// GPU waits for counts), its median over --rounds rounds that take the rows in turn. Before timing,
// every row runs once into a cleared destination and every element is checked (#wrong; any makes
// the exit status 1). Goal on an H100 (documented, not asserted: times drift): kolo's pack and
// unpack at >= 80% of one copy's bandwidth; measured there, one copy of the 102 MB took 73 us,
// torch.cat 620 us, one copy per tensor 2,332 us. One process, no MPI. Exit 77: no GPU here
// (--device double runs the same code on the host double, where times mean nothing).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <fstream>

#include "bench_args.h"
#include "bench_util.h"
#include "common/half.h"
#include "device_rig.h"
#include "gradient_set.h"

namespace {

using bench::check;
using kolo::DataType;

// Where each tensor lies in a packed buffer: element offsets that are multiples of 16 bytes, as in
// kolo's fusion buffer (comm/device/device_allreduce.cc), and the buffer's elements with the padding.
struct Layout {
  std::vector<int64_t> offsets;
  int64_t total = 0;
};

Layout layout_of(const std::vector<bench::Tensor>& tensors, int64_t elem_bytes) {
  const int64_t align = std::max<int64_t>(1, 16 / elem_bytes);
  Layout l;
  for (const bench::Tensor& t : tensors) {
    l.offsets.push_back(l.total);
    l.total = (l.total + static_cast<int64_t>(t.data.size()) + align - 1) / align * align;
  }
  return l;
}

kolo::CopyTransform cast(DataType from, DataType to) {
  kolo::CopyTransform t;
  t.from = from;
  t.to = to;
  return t;
}

// One row: its work, enqueued once; the bytes that reads plus writes; clearing its destination; and
// the elements of its result that are wrong (after a clear and one run).
struct Case {
  std::string name;
  double bytes;
  std::function<void()> enqueue;
  std::function<void()> clear;
  std::function<int64_t()> wrong;
};

struct Options {
  std::string device;
  int reps = 0;
  int rounds = 0;
  std::string shapes;
  std::string json;
};

Options parse_options(int argc, char** argv) {
  bench::Args args(argc, argv);
  Options o;
  o.device = args.text("device", bench::default_device());
  // A GPU does a repetition in microseconds, the double in tens of milliseconds.
  const bool gpu = o.device == "cuda";
  o.reps = std::max(1, args.integer("reps", gpu ? 20 : 2));
  o.rounds = std::max(1, args.integer("rounds", gpu ? 10 : 3));
  o.shapes = args.text("shapes", KOLO_RESNET50_SHAPES);
  o.json = args.text("json", "");
  args.finish();
  return o;
}

// The gradients, each element a small positive integer (exact in float16 too, and never the zero of a
// cleared buffer), where each lies packed, and the packed buffer they make.
struct Gradients {
  explicit Gradients(const std::string& shapes) : tensors(bench::read_gradient_set(shapes)) {
    for (size_t i = 0; i < count(); ++i) {
      for (size_t j = 0; j < tensors[i].data.size(); ++j)
        tensors[i].data[j] = static_cast<float>(1 + (i * 131 + j) % 2000);
    }
    n = static_cast<int64_t>(bench::element_count(tensors));
    l32 = layout_of(tensors, 4);
    l16 = layout_of(tensors, 2);
    image.assign(static_cast<size_t>(l32.total), 0.0f);
    for (size_t i = 0; i < count(); ++i)
      std::copy(tensors[i].data.begin(), tensors[i].data.end(), image.begin() + l32.offsets[i]);
  }
  size_t count() const { return tensors.size(); }
  int64_t elements(size_t i) const { return static_cast<int64_t>(tensors[i].data.size()); }

  std::vector<bench::Tensor> tensors;
  int64_t n = 0;             // elements in all
  Layout l32, l16;           // packed as float32, and as float16
  std::vector<float> image;  // the packed float32 buffer as it should be
};

// The device buffers the rows work on, and their checks. cases() captures this object: it must
// outlive the cases.
class PackBench {
 public:
  // The tensors (each its own allocation, as a framework's), where unpacking puts them, the packed
  // buffers (packed_src holds the packed image: the source of unpack, one copy and the one-piece cast).
  PackBench(bench::DeviceRig& rig, const Gradients& g)
      : rig_(rig),
        b_(rig.backend()),
        stream_(rig.stream()),
        g_(g),
        packed_(rig.allocate(g.l32.total * 4)),
        packed_src_(rig.allocate(g.l32.total * 4)),
        copy_dst_(rig.allocate(g.n * 4)),
        packed16_(rig.allocate(g.l16.total * 2)),
        whole16_(rig.allocate(g.l32.total * 2)),
        packed32_(static_cast<float*>(packed_.get())),
        source32_(static_cast<float*>(packed_src_.get())),
        host32_(static_cast<size_t>(g.l32.total)),
        host16_(static_cast<size_t>(std::max(g.l16.total, g.l32.total))) {
    rig.transfer(packed_src_.get(), g.image.data(), g.l32.total * 4);
    for (size_t i = 0; i < g.count(); ++i) {
      in_.push_back(rig.allocate(g.elements(i) * 4));
      out_.push_back(rig.allocate(g.elements(i) * 4));
      rig.transfer(in_[i].get(), g.tensors[i].data.data(), g.elements(i) * 4);
      pack_.push_back({in_[i].get(), packed32_ + g.l32.offsets[i], g.elements(i)});
      unpack_.push_back({source32_ + g.l32.offsets[i], out_[i].get(), g.elements(i)});
      pack16_.push_back({in_[i].get(), static_cast<uint16_t*>(packed16_.get()) + g.l16.offsets[i], g.elements(i)});
    }
  }

  std::vector<Case> cases() {
    const int64_t n = g_.n;
    const double moved32 = 8.0 * static_cast<double>(n);  // float32 read and written
    auto clear_packed = [this] { rig_.clear(packed32_, g_.l32.total, DataType::kFloat32); };
    auto clear_out = [this] {
      for (size_t i = 0; i < g_.count(); ++i) rig_.clear(out_[i].get(), g_.elements(i), DataType::kFloat32);
    };
    auto packed_wrong = [this] { return count_packed_wrong(); };
    auto unpacked_wrong = [this] { return count_unpacked_wrong(); };
    return {
        {"one copy of all bytes (the bound)", moved32,
         [this, n] { check(b_.copy(copy_dst_.get(), source32_, n * 4, stream_)); },
         [this, n] { rig_.clear(copy_dst_.get(), n, DataType::kFloat32); },
         [this, n] {
           rig_.transfer(host32_.data(), copy_dst_.get(), n * 4);
           int64_t wrong = 0;
           for (int64_t k = 0; k < n; ++k) wrong += host32_[static_cast<size_t>(k)] != g_.image[static_cast<size_t>(k)];
           return wrong;
         }},
        {"kolo pack: one batched copy", moved32, [this] { check(b_.batched_copy(pack_, same_, stream_)); },
         clear_packed, packed_wrong},
        {"kolo unpack: one batched copy", moved32, [this] { check(b_.batched_copy(unpack_, same_, stream_)); },
         clear_out, unpacked_wrong},
        {"pack, one copy per tensor", moved32, [this] { per_tensor(pack_); }, clear_packed, packed_wrong},
        {"unpack, one copy per tensor", moved32, [this] { per_tensor(unpack_); }, clear_out, unpacked_wrong},
        {"kolo pack with fp32 -> fp16 cast", 6.0 * static_cast<double>(n),
         [this] { check(b_.batched_copy(pack16_, to16_, stream_)); },
         [this] { rig_.clear(packed16_.get(), g_.l16.total, DataType::kFloat16); },
         [this] {
           rig_.transfer(host16_.data(), packed16_.get(), g_.l16.total * 2);
           return wrong_in_tensors([this](size_t i, int64_t j) {
             return kolo::fp16_to_float(host16_[static_cast<size_t>(g_.l16.offsets[i] + j)]);
           });
         }},
        {"fp32 -> fp16 cast of one buffer (one piece)", 6.0 * static_cast<double>(g_.l32.total),
         [this] {
           check(b_.batched_copy({kolo::CopyPiece{source32_, whole16_.get(), g_.l32.total}}, to16_, stream_));
         },
         [this] { rig_.clear(whole16_.get(), g_.l32.total, DataType::kFloat16); },
         [this] {
           rig_.transfer(host16_.data(), whole16_.get(), g_.l32.total * 2);
           int64_t wrong = 0;
           for (size_t k = 0; k < g_.image.size(); ++k) wrong += kolo::fp16_to_float(host16_[k]) != g_.image[k];
           return wrong;
         }},
    };
  }

 private:
  // Checking: results come back to the host, tensor i at offset l32.offsets[i] of host32_ (or of
  // host16_ at l16's), and are compared with the tensors' values.
  int64_t wrong_in_tensors(const std::function<float(size_t, int64_t)>& got) const {
    int64_t wrong = 0;
    for (size_t i = 0; i < g_.count(); ++i) {
      for (int64_t j = 0; j < g_.elements(i); ++j) wrong += got(i, j) != g_.tensors[i].data[static_cast<size_t>(j)];
    }
    return wrong;
  }
  float at32(size_t i, int64_t j) const { return host32_[static_cast<size_t>(g_.l32.offsets[i] + j)]; }
  int64_t count_packed_wrong() {
    rig_.transfer(host32_.data(), packed32_, g_.l32.total * 4);
    return wrong_in_tensors([this](size_t i, int64_t j) { return at32(i, j); });
  }
  int64_t count_unpacked_wrong() {
    for (size_t i = 0; i < g_.count(); ++i) {
      rig_.transfer(host32_.data() + g_.l32.offsets[i], out_[i].get(), g_.elements(i) * 4);
    }
    return wrong_in_tensors([this](size_t i, int64_t j) { return at32(i, j); });
  }
  void per_tensor(const std::vector<kolo::CopyPiece>& pieces) {
    for (const kolo::CopyPiece& p : pieces) check(b_.copy(p.dst, p.src, p.count * 4, stream_));
  }

  bench::DeviceRig& rig_;
  kolo::DeviceBackend& b_;
  const kolo::DeviceStream stream_;
  const Gradients& g_;
  std::shared_ptr<void> packed_, packed_src_, copy_dst_, packed16_, whole16_;
  float* const packed32_;
  float* const source32_;
  std::vector<std::shared_ptr<void>> in_, out_;
  std::vector<kolo::CopyPiece> pack_, unpack_, pack16_;
  std::vector<float> host32_;
  std::vector<uint16_t> host16_;
  const kolo::CopyTransform same_ = cast(DataType::kFloat32, DataType::kFloat32);
  const kolo::CopyTransform to16_ = cast(DataType::kFloat32, DataType::kFloat16);
};

// Each case once into a cleared destination, checked: this is also the warm-up. Each row's #wrong.
std::vector<int64_t> run_once_checked(bench::DeviceRig& rig, const std::vector<Case>& cases) {
  std::vector<int64_t> wrong;
  for (const Case& c : cases) {
    c.clear();
    c.enqueue();
    rig.finish();
    wrong.push_back(c.wrong());
  }
  return wrong;
}

// Each row's median over `rounds` rounds that take the rows in turn, its ratio to the first row's.
std::vector<bench::Row> time_rows(bench::DeviceRig& rig, const std::vector<Case>& cases, const Options& o) {
  std::vector<std::vector<double>> samples(cases.size());
  for (int round = 0; round < o.rounds; ++round) {
    for (size_t k = 0; k < cases.size(); ++k) samples[k].push_back(rig.time(o.reps, cases[k].enqueue));
  }
  std::vector<bench::Row> rows;
  for (size_t k = 0; k < cases.size(); ++k)
    rows.push_back({cases[k].name, bench::median(samples[k]), cases[k].bytes, 0.0});
  for (bench::Row& r : rows) r.ratio = r.seconds / rows[0].seconds;
  return rows;
}

void print_table(const std::string& device, const Gradients& g, const Options& o, const std::vector<bench::Row>& rows,
                 const std::vector<int64_t>& wrong) {
  std::printf(
      "# ResNet-50 gradients on %s (device 0): %zu float32 tensors, %lld elements (%.1f MB), packed at 16-byte "
      "aligned offsets\n",
      device.c_str(), g.count(), static_cast<long long>(g.n), 4.0 * static_cast<double>(g.n) / 1e6);
  std::printf(
      "# median of %d rounds of %d repetitions between device events; GB/s counts bytes read + written; "
      "ratio = time / time of one copy of all bytes\n",
      o.rounds, o.reps);
  std::printf("%-46s %12s %10s %8s %8s\n", "", "time (us)", "GB/s", "ratio", "#wrong");
  for (size_t k = 0; k < rows.size(); ++k) {
    std::printf("%-46s %12.1f %10.1f %8.3f %8lld\n", rows[k].name.c_str(), rows[k].seconds * 1e6, bench::algbw(rows[k]),
                rows[k].ratio, static_cast<long long>(wrong[k]));
  }
  auto share = [&](size_t k, size_t of) { return 100.0 * bench::algbw(rows[k]) / bench::algbw(rows[of]); };
  std::printf("# kolo's pack moves %.1f%% of one copy's GB/s, its unpack %.1f%% (goal on an H100: >= 80%%)\n",
              share(1, 0), share(2, 0));
  std::printf("# kolo's pack with the fp16 cast moves %.1f%% of the GB/s of the same cast of one buffer\n",
              share(5, 6));
}

void write_json(const std::string& device, const Gradients& g, const Options& o, const std::vector<bench::Row>& rows,
                const std::vector<int64_t>& wrong) {
  std::ofstream f(o.json);
  f << "{\n  \"benchmark\": \"gpu_pack\",\n  \"device\": \"" << bench::json_escape(device)
    << "\",\n  \"tensors\": " << g.count() << ",\n  \"bytes\": " << 4 * g.n << ",\n  \"reps\": " << o.reps
    << ",\n  \"rounds\": " << o.rounds << ",\n  \"rows\": [\n";
  for (size_t k = 0; k < rows.size(); ++k) {
    f << "    {\"name\": \"" << bench::json_escape(rows[k].name) << "\", \"seconds\": " << rows[k].seconds
      << ", \"bytes\": " << static_cast<long long>(rows[k].bytes) << ", \"gbps\": " << bench::algbw(rows[k])
      << ", \"ratio\": " << rows[k].ratio << ", \"wrong\": " << wrong[k] << "}" << (k + 1 < rows.size() ? "," : "")
      << "\n";
  }
  f << "  ]\n}\n";
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse_options(argc, argv);
  std::shared_ptr<kolo::DeviceBackend> backend;
  const kolo::Status opened = bench::open_device(o.device, &backend);
  if (!opened.ok()) return bench::refuse(opened, 0);
  bench::DeviceRig rig(backend, 0);
  const Gradients g(o.shapes);
  PackBench pack_bench(rig, g);
  const std::vector<Case> cases = pack_bench.cases();
  const std::vector<int64_t> wrong = run_once_checked(rig, cases);
  const std::vector<bench::Row> rows = time_rows(rig, cases, o);
  const std::string device = rig.backend().description();
  print_table(device, g, o, rows, wrong);
  if (!o.json.empty()) write_json(device, g, o, rows, wrong);
  const bool all_right = std::all_of(wrong.begin(), wrong.end(), [](int64_t w) { return w == 0; });
  if (!all_right) std::printf("# WRONG: some rows' results differ from their inputs (#wrong)\n");
  return all_right ? 0 : 1;
}
