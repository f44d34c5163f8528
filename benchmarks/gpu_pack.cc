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

}  // namespace

int main(int argc, char** argv) {
  bench::Args args(argc, argv);
  const std::string device = args.text("device", bench::default_device());
  // A GPU does a repetition in microseconds, the double in tens of milliseconds.
  const bool gpu = device == "cuda";
  const int reps = std::max(1, args.integer("reps", gpu ? 20 : 2));
  const int rounds = std::max(1, args.integer("rounds", gpu ? 10 : 3));
  const std::string shapes = args.text("shapes", KOLO_RESNET50_SHAPES), json = args.text("json", "");
  args.finish();

  std::shared_ptr<kolo::DeviceBackend> backend;
  const kolo::Status opened = bench::open_device(device, &backend);
  if (!opened.ok()) return bench::refuse(opened, 0);
  bench::DeviceRig rig(backend, 0);
  kolo::DeviceBackend& b = rig.backend();
  const kolo::DeviceStream stream = rig.stream();

  std::vector<bench::Tensor> tensors = bench::read_gradient_set(shapes);
  const size_t count = tensors.size();
  // Small positive integers: exact in float16 too, and never the zero of a cleared buffer.
  for (size_t i = 0; i < count; ++i) {
    for (size_t j = 0; j < tensors[i].data.size(); ++j)
      tensors[i].data[j] = static_cast<float>(1 + (i * 131 + j) % 2000);
  }
  const int64_t n = static_cast<int64_t>(bench::element_count(tensors));
  const Layout l32 = layout_of(tensors, 4), l16 = layout_of(tensors, 2);
  std::vector<float> image(static_cast<size_t>(l32.total), 0.0f);  // the packed buffer as it should be
  for (size_t i = 0; i < count; ++i)
    std::copy(tensors[i].data.begin(), tensors[i].data.end(), image.begin() + l32.offsets[i]);

  // The tensors (each its own allocation, as a framework's), where unpacking puts them, the packed
  // buffers (packed_src holds the packed image: the source of unpack, one copy and the one-piece cast).
  std::vector<std::shared_ptr<void>> in, out;
  std::vector<kolo::CopyPiece> pack, unpack, pack16;
  auto elements = [&](size_t i) { return static_cast<int64_t>(tensors[i].data.size()); };
  std::shared_ptr<void> packed = rig.allocate(l32.total * 4), packed_src = rig.allocate(l32.total * 4);
  std::shared_ptr<void> copy_dst = rig.allocate(n * 4), packed16 = rig.allocate(l16.total * 2),
                        whole16 = rig.allocate(l32.total * 2);
  rig.transfer(packed_src.get(), image.data(), l32.total * 4);
  float* const packed32 = static_cast<float*>(packed.get());
  float* const source32 = static_cast<float*>(packed_src.get());
  for (size_t i = 0; i < count; ++i) {
    in.push_back(rig.allocate(elements(i) * 4));
    out.push_back(rig.allocate(elements(i) * 4));
    rig.transfer(in[i].get(), tensors[i].data.data(), elements(i) * 4);
    pack.push_back({in[i].get(), packed32 + l32.offsets[i], elements(i)});
    unpack.push_back({source32 + l32.offsets[i], out[i].get(), elements(i)});
    pack16.push_back({in[i].get(), static_cast<uint16_t*>(packed16.get()) + l16.offsets[i], elements(i)});
  }

  // Checking: results come back to the host, tensor i at offset l32.offsets[i] of host32 (or of
  // host16 at l16's), and are compared with the tensors' values.
  std::vector<float> host32(static_cast<size_t>(l32.total));
  std::vector<uint16_t> host16(static_cast<size_t>(std::max(l16.total, l32.total)));
  auto wrong_in_tensors = [&](const std::function<float(size_t, int64_t)>& got) {
    int64_t wrong = 0;
    for (size_t i = 0; i < count; ++i) {
      for (int64_t j = 0; j < elements(i); ++j) wrong += got(i, j) != tensors[i].data[static_cast<size_t>(j)];
    }
    return wrong;
  };
  auto packed_wrong = [&] {
    rig.transfer(host32.data(), packed32, l32.total * 4);
    return wrong_in_tensors([&](size_t i, int64_t j) { return host32[static_cast<size_t>(l32.offsets[i] + j)]; });
  };
  auto unpacked_wrong = [&] {
    for (size_t i = 0; i < count; ++i) rig.transfer(host32.data() + l32.offsets[i], out[i].get(), elements(i) * 4);
    return wrong_in_tensors([&](size_t i, int64_t j) { return host32[static_cast<size_t>(l32.offsets[i] + j)]; });
  };
  auto clear_packed = [&] { rig.clear(packed32, l32.total, DataType::kFloat32); };
  auto clear_out = [&] {
    for (size_t i = 0; i < count; ++i) rig.clear(out[i].get(), elements(i), DataType::kFloat32);
  };
  auto per_tensor = [&](const std::vector<kolo::CopyPiece>& pieces) {
    for (const kolo::CopyPiece& p : pieces) check(b.copy(p.dst, p.src, p.count * 4, stream));
  };
  const kolo::CopyTransform same = cast(DataType::kFloat32, DataType::kFloat32);
  const kolo::CopyTransform to16 = cast(DataType::kFloat32, DataType::kFloat16);
  const double moved32 = 8.0 * static_cast<double>(n);  // float32 read and written

  const std::vector<Case> cases = {
      {"one copy of all bytes (the bound)", moved32, [&] { check(b.copy(copy_dst.get(), source32, n * 4, stream)); },
       [&] { rig.clear(copy_dst.get(), n, DataType::kFloat32); },
       [&] {
         rig.transfer(host32.data(), copy_dst.get(), n * 4);
         int64_t wrong = 0;
         for (int64_t k = 0; k < n; ++k) wrong += host32[static_cast<size_t>(k)] != image[static_cast<size_t>(k)];
         return wrong;
       }},
      {"kolo pack: one batched copy", moved32, [&] { check(b.batched_copy(pack, same, stream)); }, clear_packed,
       packed_wrong},
      {"kolo unpack: one batched copy", moved32, [&] { check(b.batched_copy(unpack, same, stream)); }, clear_out,
       unpacked_wrong},
      {"pack, one copy per tensor", moved32, [&] { per_tensor(pack); }, clear_packed, packed_wrong},
      {"unpack, one copy per tensor", moved32, [&] { per_tensor(unpack); }, clear_out, unpacked_wrong},
      {"kolo pack with fp32 -> fp16 cast", 6.0 * static_cast<double>(n),
       [&] { check(b.batched_copy(pack16, to16, stream)); },
       [&] { rig.clear(packed16.get(), l16.total, DataType::kFloat16); },
       [&] {
         rig.transfer(host16.data(), packed16.get(), l16.total * 2);
         return wrong_in_tensors(
             [&](size_t i, int64_t j) { return kolo::fp16_to_float(host16[static_cast<size_t>(l16.offsets[i] + j)]); });
       }},
      {"fp32 -> fp16 cast of one buffer (one piece)", 6.0 * static_cast<double>(l32.total),
       [&] {
         check(b.batched_copy({kolo::CopyPiece{source32, whole16.get(), l32.total}}, to16, stream));
       },
       [&] { rig.clear(whole16.get(), l32.total, DataType::kFloat16); },
       [&] {
         rig.transfer(host16.data(), whole16.get(), l32.total * 2);
         int64_t wrong = 0;
         for (size_t k = 0; k < image.size(); ++k) wrong += kolo::fp16_to_float(host16[k]) != image[k];
         return wrong;
       }},
  };

  // Each case once into a cleared destination, checked: this is also the warm-up.
  std::vector<int64_t> wrong;
  for (const Case& c : cases) {
    c.clear();
    c.enqueue();
    rig.finish();
    wrong.push_back(c.wrong());
  }
  std::vector<std::vector<double>> samples(cases.size());
  for (int round = 0; round < rounds; ++round) {
    for (size_t k = 0; k < cases.size(); ++k) samples[k].push_back(rig.time(reps, cases[k].enqueue));
  }

  std::vector<bench::Row> rows;
  for (size_t k = 0; k < cases.size(); ++k)
    rows.push_back({cases[k].name, bench::median(samples[k]), cases[k].bytes, 0.0});
  for (bench::Row& r : rows) r.ratio = r.seconds / rows[0].seconds;
  std::printf(
      "# ResNet-50 gradients on %s (device 0): %zu float32 tensors, %lld elements (%.1f MB), packed at 16-byte "
      "aligned offsets\n",
      b.description().c_str(), count, static_cast<long long>(n), 4.0 * static_cast<double>(n) / 1e6);
  std::printf(
      "# median of %d rounds of %d repetitions between device events; GB/s counts bytes read + written; "
      "ratio = time / time of one copy of all bytes\n",
      rounds, reps);
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

  if (!json.empty()) {
    std::ofstream f(json);
    f << "{\n  \"benchmark\": \"gpu_pack\",\n  \"device\": \"" << bench::json_escape(b.description())
      << "\",\n  \"tensors\": " << count << ",\n  \"bytes\": " << 4 * n << ",\n  \"reps\": " << reps
      << ",\n  \"rounds\": " << rounds << ",\n  \"rows\": [\n";
    for (size_t k = 0; k < rows.size(); ++k) {
      f << "    {\"name\": \"" << bench::json_escape(rows[k].name) << "\", \"seconds\": " << rows[k].seconds
        << ", \"bytes\": " << static_cast<long long>(rows[k].bytes) << ", \"gbps\": " << bench::algbw(rows[k])
        << ", \"ratio\": " << rows[k].ratio << ", \"wrong\": " << wrong[k] << "}" << (k + 1 < rows.size() ? "," : "")
        << "\n";
    }
    f << "  ]\n}\n";
  }
  const bool all_right = std::all_of(wrong.begin(), wrong.end(), [](int64_t w) { return w == 0; });
  if (!all_right) std::printf("# WRONG: some rows' results differ from their inputs (#wrong)\n");
  return all_right ? 0 : 1;
}
