#include "kolorun_test_support.h"

#include <gtest/gtest.h>

#include <utility>

namespace kolo {
namespace launcher {

Machine machine(bool root, std::vector<std::string> env) {
  Machine m;
  m.mpirun = "/usr/bin/mpirun";
  m.is_root = root;
  m.hostname = "node1.example.com";
  m.env_names = std::move(env);
  return m;
}

Translated translate(const std::vector<std::string>& args, const Machine& m) {
  LaunchOptions o;
  std::string error;
  EXPECT_TRUE(parse_command_line(args, &o, &error)) << error;
  MpirunCommand c = build_mpirun_command(o, m);
  Translated t;
  t.argv = shell_join(c.argv);
  for (const auto& kv : c.set_env) t.env += (t.env.empty() ? "" : " ") + kv.first + "=" + kv.second;
  return t;
}

std::string parse_error(const std::vector<std::string>& args) {
  LaunchOptions o;
  std::string error;
  EXPECT_FALSE(parse_command_line(args, &o, &error));
  return error;
}

LaunchOptions parsed(const std::vector<std::string>& args) {
  LaunchOptions o;
  std::string error;
  EXPECT_TRUE(parse_command_line(args, &o, &error)) << error;
  return o;
}

}  // namespace launcher
}  // namespace kolo
