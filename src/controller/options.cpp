#include <algorithm>

#include <hybridjob/api/names.h>
#include <hybridjob/common/strings.h>
#include <hybridjob/controller/options.h>

namespace hybridjob::controller {

namespace {

// A comma-separated flag of names, each trimmed, each one `valid` says is of
// its kind (`kind` names it in the error), none twice.
Result<std::vector<std::string>> ParseNameList(std::string_view flag, std::string_view text,
                                               bool (*valid)(std::string_view),
                                               std::string_view kind) {
  std::vector<std::string> names;
  for (std::string_view part : Split(text, ',')) {
    while (!part.empty() && part.front() == ' ') {
      part.remove_prefix(1);
    }
    while (!part.empty() && part.back() == ' ') {
      part.remove_suffix(1);
    }
    const std::string name(part);
    if (!valid(name)) {
      return InvalidArgument(std::string(flag) + ": \"" + name + "\" is not " + std::string(kind));
    }
    if (std::find(names.begin(), names.end(), name) != names.end()) {
      return InvalidArgument(std::string(flag) + ": \"" + name + "\" is listed twice");
    }
    names.push_back(name);
  }
  return names;
}

bool IsExtendedResourceName(std::string_view name) {
  return name.find('/') != std::string_view::npos && api::IsQualifiedName(name);
}

bool IsSchedulerName(std::string_view name) {
  return api::IsDns1123Subdomain(name);
}

}  // namespace

Result<std::vector<std::string>> ParseGpuResources(std::string_view text) {
  return ParseNameList("--gpu-resources", text, IsExtendedResourceName,
                       "an extended resource name (a domain prefix and a name, e.g. "
                       "nvidia.com/gpu)");
}

Result<std::vector<std::string>> ParseSchedulerNames(std::string_view text) {
  return ParseNameList("--allowed-scheduler-names", text, IsSchedulerName,
                       "a scheduler name (a DNS-1123 subdomain, e.g. gang-scheduler)");
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
