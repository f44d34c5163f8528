// What every C++ benchmark's main() starts with: MPI (with thread support, for kolo's thread) and
// "--name value" options, where an unknown option or a value that is not a number ends the
// program with a message instead of being ignored.
#pragma once

#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace bench {

struct World {
  int rank = 0;
  int size = 1;
};

inline World start_mpi(int* argc, char*** argv) {
  int provided = 0;
  MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
  World w;
  MPI_Comm_rank(MPI_COMM_WORLD, &w.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &w.size);
  return w;
}

class Args {
 public:
  Args(int argc, char** argv) : program_(argv[0]) {
    for (int i = 1; i < argc; i += 2) {
      const std::string name = argv[i];
      if (name.rfind("--", 0) != 0 || i + 1 >= argc) fail("expected --option value, got '" + name + "'");
      given_[name.substr(2)] = argv[i + 1];
    }
  }

  int integer(const std::string& name, int fallback) { return static_cast<int>(number(name, fallback)); }
  double real(const std::string& name, double fallback) { return number(name, fallback); }
  std::string text(const std::string& name, const std::string& fallback) {
    known_[name] = true;
    auto it = given_.find(name);
    return it == given_.end() ? fallback : it->second;
  }

  // "--name 4,256,4096": whole numbers, each times `unit`.
  std::vector<long long> integers(const std::string& name, const std::string& fallback, long long unit = 1) {
    const std::string list = text(name, fallback);
    std::vector<long long> out;
    std::istringstream in(list);
    for (std::string part; std::getline(in, part, ',');) {
      char* end = nullptr;
      const long long v = std::strtoll(part.c_str(), &end, 10);
      if (end == part.c_str() || *end != '\0' || v <= 0) fail("--" + name + " takes positive whole numbers, not '" + list + "'");
      out.push_back(v * unit);
    }
    return out;
  }

  // After every option was read: an option nobody asked for is a typo, not something to ignore.
  void finish() {
    for (const auto& kv : given_) {
      if (!known_.count(kv.first)) fail("unknown option --" + kv.first);
    }
  }

 private:
  double number(const std::string& name, double fallback) {
    const std::string value = text(name, "");
    if (value.empty()) return fallback;
    char* end = nullptr;
    const double v = std::strtod(value.c_str(), &end);
    if (end == value.c_str() || *end != '\0') fail("--" + name + " takes a number, not '" + value + "'");
    return v;
  }

  // Without MPI too: a one-process benchmark (gpu_pack) takes options but never starts MPI.
  [[noreturn]] void fail(const std::string& why) {
    int mpi = 0, rank = 0;
    MPI_Initialized(&mpi);
    if (mpi) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) std::fprintf(stderr, "%s: %s\n", program_.c_str(), why.c_str());
    if (mpi) MPI_Finalize();
    std::exit(2);
  }

  std::string program_;
  std::map<std::string, std::string> given_;
  std::map<std::string, bool> known_;
};

}  // namespace bench
