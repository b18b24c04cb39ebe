#include <algorithm>

#include <hybridjob/api/names.h>
#include <hybridjob/common/strings.h>
#include <hybridjob/controller/options.h>

namespace hybridjob::controller {

Result<std::vector<std::string>> ParseGpuResources(std::string_view text) {
  std::vector<std::string> names;
  for (std::string_view part : Split(text, ',')) {
    while (!part.empty() && part.front() == ' ') {
      part.remove_prefix(1);
    }
    while (!part.empty() && part.back() == ' ') {
      part.remove_suffix(1);
    }
    const std::string name(part);
    if (name.find('/') == std::string::npos || !api::IsQualifiedName(name)) {
      return InvalidArgument("--gpu-resources: \"" + name +
                             "\" is not an extended resource name (a domain prefix and a "
                             "name, e.g. nvidia.com/gpu)");
    }
    if (std::find(names.begin(), names.end(), name) != names.end()) {
      return InvalidArgument("--gpu-resources: \"" + name + "\" is listed twice");
    }
    names.push_back(name);
  }
  return names;
}

}  // namespace hybridjob::controller
