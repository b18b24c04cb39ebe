// Resource use of this process and the machine's load, for benchmark reports.
#pragma once

#include <cstdint>
#include <fstream>
#include <string>
#include <sys/resource.h>

namespace hybridjob::bench {

// Current resident set size in bytes (from /proc/self/statm).
inline int64_t ResidentBytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t pages_total = 0;
  int64_t pages_resident = 0;
  statm >> pages_total >> pages_resident;
  return pages_resident * 4096;
}

inline int64_t PeakResidentBytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<int64_t>(usage.ru_maxrss) * 1024;
}

// The 1-minute load average, as text (from /proc/loadavg).
inline std::string LoadAverage() {
  std::ifstream in("/proc/loadavg");
  std::string one;
  in >> one;
  return one;
}

inline double CpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

}  // namespace hybridjob::bench
