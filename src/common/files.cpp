#include <filesystem>
#include <fstream>
#include <sstream>

#include <hybridjob/common/files.h>

namespace hybridjob {

Result<std::string> ReadFile(const std::string& path, std::string_view what) {
  // A directory opens like a file but reads as nothing: say what it is.
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) {
    return InvalidArgument(std::string(what) + ": " + path + " is a directory, not a file");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return InvalidArgument(std::string(what) + ": cannot read " + path);
  }
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

}  // namespace hybridjob
