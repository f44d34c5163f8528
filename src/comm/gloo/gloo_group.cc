#include "comm/gloo/gloo_group.h"

#include <algorithm>

namespace kolo {
namespace {

class GlooTransfer : public Group::Transfer {
 public:
  GlooTransfer(std::shared_ptr<GlooMesh> mesh, std::unique_ptr<gloo::transport::UnboundBuffer> buffer, bool send,
               int peer, const char* what)
      : mesh_(std::move(mesh)), buffer_(std::move(buffer)), send_(send), peer_(peer), what_(what) {}
  // Never waited for (an error elsewhere ended the collective): its buffer stays with the mesh.
  ~GlooTransfer() override { cancel(); }
  Status wait(WaitPace) override {
    if (!buffer_) return mesh_->broken();
    Status s = mesh_->wait(*buffer_, send_, peer_, what_);
    // Finished: the buffer is Gloo's no more. Failed: the mesh is broken, nothing reaches it either.
    buffer_.reset();
    return s;
  }
  void cancel() override {
    if (buffer_) mesh_->bury(std::move(buffer_), what_);
  }

 private:
  std::shared_ptr<GlooMesh> mesh_;
  std::unique_ptr<gloo::transport::UnboundBuffer> buffer_;
  bool send_;
  int peer_;
  const char* what_;
};

}  // namespace

GlooGroup::GlooGroup(std::shared_ptr<GlooMesh> mesh, std::vector<int> members, int id)
    : mesh_(std::move(mesh)), members_(std::move(members)), id_(static_cast<uint64_t>(id)) {
  rank_ = static_cast<int>(std::find(members_.begin(), members_.end(), mesh_->rank()) - members_.begin());
}

Status GlooGroup::post(bool send, int peer, int tag, char* data, size_t bytes, const char* what,
                       std::unique_ptr<Transfer>* out) {
  const int to = members_[static_cast<size_t>(peer)];
  std::unique_ptr<gloo::transport::UnboundBuffer> buffer;
  Status s = mesh_->post(send, to, (id_ << 16) | static_cast<uint64_t>(tag), data, bytes, what, &buffer);
  if (!s.ok()) return s;
  *out = std::make_unique<GlooTransfer>(mesh_, std::move(buffer), send, to, what);
  return Status::OK();
}

Status GlooGroup::post_send(int peer, int tag, const char* data, size_t bytes, const char* what,
                            std::unique_ptr<Transfer>* out) {
  // Gloo's buffers are read-write whichever way they go; a send only reads.
  return post(true, peer, tag, const_cast<char*>(data), bytes, what, out);
}

Status GlooGroup::post_receive(int peer, int tag, char* data, size_t bytes, const char* what,
                               std::unique_ptr<Transfer>* out) {
  return post(false, peer, tag, data, bytes, what, out);
}

}  // namespace kolo
