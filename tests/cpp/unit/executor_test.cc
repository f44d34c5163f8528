// The executor's side of the collective seam: what a collective is handed (buffers, agreed values,
// joined pieces, an output allocator), and asynchronous completion: a group whose collective left
// work running completes only when that work has ended, and a stopping engine aborts it.
#include <gtest/gtest.h>

#include <cstring>
#include <optional>

#include "cpu/host_memory.h"
#include "engine/executor.h"

namespace kolo {
namespace {

// Work that ends when the test says so.
struct Switch {
  std::optional<Status> outcome;
  std::string aborted_with;
};

class SwitchedCompletion : public Completion {
 public:
  explicit SwitchedCompletion(Switch* s) : s_(s) {}
  std::optional<Status> poll() override { return s_->outcome; }
  void abort(const Status& why) override {
    s_->aborted_with = why.message();
    s_->outcome = Status::Aborted("stopped: " + why.message());
  }

 private:
  Switch* s_;
};

// Records the calls it is handed; sums each input into its output (a 1-rank allreduce plus one);
// leaves its work running when `pending` is set.
class RecordingCollective : public Collective {
 public:
  const char* name() const override { return "RECORDING"; }
  bool accepts(OpKind kind, DeviceType device) const override {
    return device == DeviceType::kCPU && (kind == OpKind::kAllreduce || kind == OpKind::kAllgather);
  }
  Status run(CollectiveCall& call, PhaseLog&, std::unique_ptr<Completion>* out) override {
    calls.push_back(call);
    if (call.kind == OpKind::kAllgather) {
      Piece& p = call.pieces[0];
      Status s = call.allocate(0, call.shape, host_memory, &p.out);
      if (!s.ok()) return s;
      if (p.bytes > 0) std::memcpy(p.out, p.in, static_cast<size_t>(p.bytes));
    } else {
      for (Piece& p : call.pieces) {
        if (p.joined) continue;
        const float* in = static_cast<const float*>(p.in);
        float* o = static_cast<float*>(p.out);
        for (int64_t i = 0; i < p.bytes / 4; ++i) o[i] = in[i] + 1.0f;
      }
    }
    if (pending != nullptr) *out = std::make_unique<SwitchedCompletion>(pending);
    return Status::OK();
  }
  std::vector<CollectiveCall> calls;
  Switch* pending = nullptr;
};

class ExecutorTest : public ::testing::Test {
 protected:
  ExecutorTest() {
    auto c = std::make_unique<RecordingCollective>();
    collective = c.get();
    registry.add(std::move(c));
  }

  // Submits an allreduce of `data` in place, as the API would.
  int64_t submit(const std::string& name, std::vector<float>& data) {
    auto e = std::make_unique<TensorEntry>();
    e->request.name = name;
    e->request.kind = OpKind::kAllreduce;
    e->input = cpu_view(data);
    e->output = e->input;
    e->handle = handles.create();
    const int64_t h = e->handle;
    EXPECT_TRUE(queue.push(std::move(e)).ok());
    return h;
  }

  static Response allreduce(const std::string& name, int64_t n) {
    Response r;
    r.name = name;
    r.kind = OpKind::kAllreduce;
    r.dtype = DataType::kFloat32;
    r.reduce_op = ReduceOp::kAverage;
    r.postscale = 0.5;
    r.contributors = 3;
    r.shape = {n};
    return r;
  }

  CollectiveRegistry registry;
  RecordingCollective* collective = nullptr;
  TensorQueue queue;
  HandleTable handles;
  Executor executor{&registry, &queue, &handles, nullptr, 1 << 20, /*rank=*/2,
                    /*join_average_over_contributors=*/true};
};

TEST_F(ExecutorTest, HandsTheCollectiveAFusedGroupAsBuffersWithTheAgreedValues) {
  std::vector<float> a = {1, 2}, b = {3, 4, 5};
  const int64_t ha = submit("a", a), hb = submit("b", b);
  executor.run({allreduce("a", 2), allreduce("b", 3)}, 0.0);
  ASSERT_EQ(collective->calls.size(), 1u);
  const CollectiveCall& call = collective->calls[0];
  EXPECT_EQ(call.kind, OpKind::kAllreduce);
  EXPECT_EQ(call.reduce_op, ReduceOp::kAverage);
  EXPECT_EQ(call.postscale, 0.5);
  EXPECT_EQ(call.contributors, 3);
  ASSERT_EQ(call.pieces.size(), 2u);
  EXPECT_EQ(call.pieces[0].name, "a");
  EXPECT_EQ(call.pieces[0].in, a.data());
  EXPECT_EQ(call.pieces[0].out, a.data());
  EXPECT_EQ(call.pieces[0].bytes, 8);
  EXPECT_EQ(call.pieces[1].name, "b");
  EXPECT_EQ(call.pieces[1].bytes, 12);
  EXPECT_EQ(executor.running(), 0u);
  EXPECT_TRUE(handles.wait(ha, 0, nullptr).ok());
  EXPECT_TRUE(handles.wait(hb, 0, nullptr).ok());
  EXPECT_EQ(a, (std::vector<float>{2, 3}));
  EXPECT_EQ(queue.in_flight(), 0u);
}

TEST_F(ExecutorTest, AGroupLeftRunningCompletesOnlyWhenItsWorkHasEnded) {
  Switch work;
  collective->pending = &work;
  std::vector<float> a = {1, 2};
  const int64_t h = submit("a", a);
  executor.run({allreduce("a", 2)}, 0.0);
  EXPECT_EQ(executor.running(), 1u);
  executor.poll();
  EXPECT_FALSE(handles.poll(h).has_value());
  // The name is free already: the next step may submit it while this step's work ends.
  EXPECT_EQ(queue.in_flight(), 0u);
  std::vector<float> again = {5};
  const int64_t next = submit("a", again);
  work.outcome = Status::OK();
  executor.poll();
  EXPECT_EQ(executor.running(), 0u);
  ASSERT_TRUE(handles.poll(h).has_value());
  EXPECT_TRUE(handles.wait(h, 0, nullptr).ok());
  EXPECT_FALSE(handles.poll(next).has_value());
  EXPECT_EQ(queue.in_flight(), 1u);
}

TEST_F(ExecutorTest, AFailureReportedByTheRunningWorkFailsEveryTensorOfTheGroup) {
  Switch work;
  collective->pending = &work;
  std::vector<float> a = {1}, b = {2};
  const int64_t ha = submit("a", a), hb = submit("b", b);
  executor.run({allreduce("a", 1), allreduce("b", 1)}, 0.0);
  work.outcome = Status::Internal("NCCL error: remote process exited");
  executor.poll();
  EXPECT_EQ(handles.wait(ha, 0, nullptr).message(), "allreduce of tensor 'a' on rank 2: NCCL error: remote process exited");
  EXPECT_EQ(handles.wait(hb, 0, nullptr).message(), "allreduce of tensor 'b' on rank 2: NCCL error: remote process exited");
}

TEST_F(ExecutorTest, DrainAbortsWorkThatDoesNotEndWithinItsBound) {
  Switch work;
  collective->pending = &work;
  std::vector<float> a = {1};
  const int64_t h = submit("a", a);
  executor.run({allreduce("a", 1)}, 0.0);
  executor.drain(0.01, Status::Aborted("kolo was shut down"));
  EXPECT_EQ(work.aborted_with, "kolo was shut down");
  Status s = handles.wait(h, 0, nullptr);
  EXPECT_EQ(s.code(), StatusCode::kAborted);
  EXPECT_EQ(s.message(), "allreduce of tensor 'a' on rank 2: stopped: kolo was shut down");
  EXPECT_EQ(executor.running(), 0u);
}

TEST_F(ExecutorTest, AJoinedRankTakesPartWithPiecesOfNoMemoryOfItsOwn) {
  std::vector<float> b = {2, 3};
  const int64_t hb = submit("b", b);
  executor.run({allreduce("a", 4), allreduce("b", 2)}, 0.0, /*joined=*/true);
  ASSERT_EQ(collective->calls.size(), 1u);
  const CollectiveCall& call = collective->calls[0];
  ASSERT_EQ(call.pieces.size(), 2u);
  EXPECT_TRUE(call.pieces[0].joined);
  EXPECT_EQ(call.pieces[0].in, nullptr);
  EXPECT_EQ(call.pieces[0].bytes, 16);
  EXPECT_EQ(call.pieces[0].shape, (std::vector<int64_t>{4}));
  EXPECT_FALSE(call.pieces[1].joined);
  EXPECT_TRUE(handles.wait(hb, 0, nullptr).ok());
}

TEST_F(ExecutorTest, OutputsComeFromTheCallersAllocatorOrKolosOwnMemory) {
  std::vector<float> in = {7, 8};
  std::vector<float> mine(2);
  auto e = std::make_unique<TensorEntry>();
  e->request.name = "g";
  e->request.kind = OpKind::kAllgather;
  e->input = cpu_view(in);
  e->allocate = [&](const std::vector<int64_t>& shape, TensorView* out) {
    out->data = mine.data();
    return Status::OK();
  };
  e->handle = handles.create();
  const int64_t h = e->handle;
  ASSERT_TRUE(queue.push(std::move(e)).ok());
  Response r;
  r.name = "g";
  r.kind = OpKind::kAllgather;
  r.shape = {2};
  r.first_dims = {2};
  executor.run({r}, 0.0);
  Output out;
  ASSERT_TRUE(handles.wait(h, 0, &out).ok());
  EXPECT_EQ(out.view.data, mine.data());
  EXPECT_EQ(mine, in);

  // No allocator: kolo's memory, handed over.
  auto f = std::make_unique<TensorEntry>();
  f->request.name = "g";
  f->request.kind = OpKind::kAllgather;
  f->input = cpu_view(in);
  f->handle = handles.create();
  const int64_t h2 = f->handle;
  ASSERT_TRUE(queue.push(std::move(f)).ok());
  executor.run({r}, 0.0);
  ASSERT_TRUE(handles.wait(h2, 0, &out).ok());
  ASSERT_NE(out.storage, nullptr);
  EXPECT_EQ(out.view.data, out.storage.get());
  EXPECT_EQ(static_cast<float*>(out.view.data)[1], 8.0f);
}

TEST(Executor, AnAverageDividesByEveryRankUnlessToldToDivideByTheContributors) {
  CollectiveRegistry registry;
  auto c = std::make_unique<RecordingCollective>();
  RecordingCollective* collective = c.get();
  registry.add(std::move(c));
  TensorQueue queue;
  HandleTable handles;
  Executor executor(&registry, &queue, &handles, nullptr, 1 << 20, 0);  // the default: every rank
  std::vector<float> a = {1};
  auto e = std::make_unique<TensorEntry>();
  e->request.name = "a";
  e->input = cpu_view(a);
  e->output = e->input;
  e->handle = handles.create();
  ASSERT_TRUE(queue.push(std::move(e)).ok());
  Response r;
  r.name = "a";
  r.shape = {1};
  r.contributors = 3;
  executor.run({r}, 0.0);
  ASSERT_EQ(collective->calls.size(), 1u);
  EXPECT_EQ(collective->calls[0].contributors, 0);
}

TEST(CollectiveRegistry, AnswersWhatIsSupportedAndWhyNot) {
  CollectiveRegistry registry;
  registry.add(std::make_unique<RecordingCollective>());
  EXPECT_TRUE(registry.supports(OpKind::kAllreduce, DeviceType::kCPU));
  EXPECT_FALSE(registry.supports(OpKind::kBroadcast, DeviceType::kCPU));
  EXPECT_FALSE(registry.supports(OpKind::kAllreduce, DeviceType::kCUDA));
  EXPECT_EQ(registry.unsupported_reason(DeviceType::kCUDA), "this kolo has no GPU support");
  registry.set_unsupported_reason(DeviceType::kCUDA, "no GPU is usable (no CUDA-capable device is detected)");
  EXPECT_EQ(registry.unsupported_reason(DeviceType::kCUDA), "no GPU is usable (no CUDA-capable device is detected)");
}

}  // namespace
}  // namespace kolo
