// gang-scheduler: flags, wiring and signals only; the logic lives in the libraries.
#include <cstring>
#include <iostream>

namespace {

constexpr const char* kUsage = R"(Usage: gang-scheduler [flags]

Flags:
  -h, --help   show this help
)";

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "-h") == 0 || std::strcmp(argv[i], "--help") == 0) {
      std::cout << kUsage;
      return 0;
    }
  }
  std::cerr << "gang-scheduler: not implemented yet\n" << kUsage;
  return 2;
}
