// What kolorun_args_test's suites (kolorun_args_test.cc, kolorun_elastic_test.cc, kolorun_slurm_test.cc)
// share: a machine to translate for, and command lines parsed and translated.
#pragma once

#include <string>
#include <vector>

#include "launch_options.h"
#include "mpirun_command.h"

namespace kolo {
namespace launcher {

struct Translated {
  std::string argv;  // shell_join of the mpirun command
  std::string env;   // NAME=VALUE set for mpirun, space separated
};

// node1.example.com with /usr/bin/mpirun and the environment variables `env`.
Machine machine(bool root = false, std::vector<std::string> env = {"PATH", "HOME"});

// `args` parsed (a failure fails the test) and turned into mpirun's command.
Translated translate(const std::vector<std::string>& args, const Machine& m = machine());

// `args` parsed, expected to fail: the message.
std::string parse_error(const std::vector<std::string>& args);

// `args` parsed (a failure fails the test).
LaunchOptions parsed(const std::vector<std::string>& args);

}  // namespace launcher
}  // namespace kolo
