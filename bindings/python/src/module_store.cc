// kolo._C's store server (kolo_store_server_*): a job's key-value store served from this process, for
// launchers that are not kolorun (kolo.ray's RayExecutor, in Ray's driver).
#include <memory>
#include <stdexcept>
#include <string>

#include "module_parts.h"

namespace kolo_py {
namespace {

class StoreServer {
 public:
  StoreServer(const std::string& bind_address, int port, const std::string& token) {
    kolo_store_server* server = nullptr;
    int32_t code;
    {
      py::gil_scoped_release release;
      code = kolo_store_server_start(bind_address.c_str(), port, token.c_str(), &server);
    }
    if (code != KOLO_OK) raise_failed(code);
    server_.reset(server);
  }
  int port() const { return server_ ? kolo_store_server_port(server_.get()) : 0; }
  int64_t add(const std::string& key, int64_t delta) {
    if (!server_) throw std::runtime_error("StoreServer.add('" + key + "'): the server was stopped");
    int64_t sum = 0;
    int32_t code;
    {
      py::gil_scoped_release release;
      code = kolo_store_server_add(server_.get(), key.c_str(), delta, &sum);
    }
    if (code != KOLO_OK) raise_failed(code);
    return sum;
  }
  void stop() {
    py::gil_scoped_release release;
    server_.reset();
  }

 private:
  struct Free {
    void operator()(kolo_store_server* s) const { kolo_store_server_free(s); }
  };
  std::unique_ptr<kolo_store_server, Free> server_;
};

}  // namespace

void register_store(py::module_& m) {
  py::class_<StoreServer>(m, "StoreServer")
      .def(py::init<const std::string&, int, const std::string&>(), py::arg("bind_address"), py::arg("port"),
           py::arg("token"))
      .def_property_readonly("port", &StoreServer::port)
      .def("add", &StoreServer::add, py::arg("key"), py::arg("delta"))
      .def("stop", &StoreServer::stop);
}

}  // namespace kolo_py
