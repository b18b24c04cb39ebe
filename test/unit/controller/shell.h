// Test support: run a POSIX shell script and capture what it prints.
#pragma once

#include <cstdio>
#include <fstream>
#include <string>
#include <unistd.h>
#include <vector>

#include <gtest/gtest.h>

namespace hybridjob::controller::testing {

struct ShellResult {
  int exit_status = -1;
  std::string output;
};

// Runs `script` with /bin/sh; `args` become $1, $2, ... The script is written
// to a file, and arguments are passed through positional parameters of a fixed
// command line, so no test data is ever parsed by the shell.
inline ShellResult RunShell(const std::string& script, const std::vector<std::string>& args = {}) {
  static int counter = 0;
  const std::string dir = ::testing::TempDir();
  // Unique per process too: ctest runs test cases as parallel processes.
  const std::string script_path = dir + "/hybridjob-script-" + std::to_string(::getpid()) + "-" +
                                  std::to_string(++counter) + ".sh";
  {
    std::ofstream out(script_path);
    out << script;
  }
  std::string command = "/bin/sh " + script_path;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string arg_path = script_path + ".arg" + std::to_string(i);
    std::ofstream out(arg_path);
    out << args[i];
    // "$(cat file)" keeps the argument's bytes intact, quoting included.
    command += " \"$(cat " + arg_path + ")\"";
  }
  ShellResult result;
  auto remove_files = [&] {
    std::remove(script_path.c_str());
    for (size_t i = 0; i < args.size(); ++i) {
      std::remove((script_path + ".arg" + std::to_string(i)).c_str());
    }
  };
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) {
    remove_files();
    return result;
  }
  char buffer[4096];
  size_t read = 0;
  while ((read = fread(buffer, 1, sizeof(buffer), pipe)) > 0) {
    result.output.append(buffer, read);
  }
  result.exit_status = pclose(pipe);
  remove_files();
  return result;
}

}  // namespace hybridjob::controller::testing
