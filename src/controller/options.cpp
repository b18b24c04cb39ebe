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

Result<std::vector<std::string>> ParseSchedulerNames(std::string_view text) {
  std::vector<std::string> names;
  for (std::string_view part : Split(text, ',')) {
    while (!part.empty() && part.front() == ' ') {
      part.remove_prefix(1);
    }
    while (!part.empty() && part.back() == ' ') {
      part.remove_suffix(1);
    }
    const std::string name(part);
    if (!api::IsDns1123Subdomain(name)) {
      return InvalidArgument("--allowed-scheduler-names: \"" + name +
                             "\" is not a scheduler name (a DNS-1123 subdomain, e.g. "
                             "gang-scheduler)");
    }
    if (std::find(names.begin(), names.end(), name) != names.end()) {
      return InvalidArgument("--allowed-scheduler-names: \"" + name + "\" is listed twice");
    }
    names.push_back(name);
  }
  return names;
}

std::string SchedulerNameRefusal(std::string_view scheduler_name,
                                 const std::vector<std::string>& allowed) {
  if (std::find(allowed.begin(), allowed.end(), scheduler_name) != allowed.end()) {
    return {};
  }
  std::string listed;
  for (const std::string& name : allowed) {
    listed += (listed.empty() ? "" : ", ") + name;
  }
  return "spec.schedulerName: \"" + std::string(scheduler_name) +
         "\" is not allowed on this cluster (the controller's --allowed-scheduler-names: " +
         listed +
         "); a job placed by another scheduler would escape its queue's limits and its gang "
         "placement: name one of those";
}

}  // namespace hybridjob::controller
