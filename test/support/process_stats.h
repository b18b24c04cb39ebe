// Resource use of another process, read from /proc: for the load test and
// the benchmarks that run the real binaries as child processes.
#pragma once

#include <cstdint>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <sys/types.h>
#include <unistd.h>

namespace hybridjob::testing {

// CPU seconds (user + system) of a process, from /proc/<pid>/stat; 0 if gone.
inline double ProcessCpuSeconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // The command name may hold spaces and parentheses: fields follow the last ')'.
  const size_t end_of_name = text.rfind(')');
  if (end_of_name == std::string::npos || end_of_name + 2 > text.size()) {
    return 0;
  }
  std::istringstream fields(text.substr(end_of_name + 2));
  std::string field;
  double ticks = 0;
  // Field 3 (state) is the first after the name; utime and stime are 14 and 15.
  for (int i = 3; i <= 15 && fields >> field; ++i) {
    if (i == 14 || i == 15) {
      ticks += std::stod(field);
    }
  }
  return ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// A kB line of /proc/<pid>/status ("VmRSS", or "VmHWM": the peak resident
// set), in bytes; 0 if gone.
inline int64_t ProcessMemoryBytes(pid_t pid, const std::string& key) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key + ":", 0) == 0) {
      return std::stoll(line.substr(key.size() + 1)) * 1024;
    }
  }
  return 0;
}

inline double ProcessMemoryMiB(pid_t pid, const std::string& key) {
  return static_cast<double>(ProcessMemoryBytes(pid, key)) / (1024.0 * 1024.0);
}

}  // namespace hybridjob::testing
