// Fuzzes what anyone who may create a pod controls: the pod object
// (ParsePodJson) and its group-spec annotation (ParseGroupSpec), then the
// trust check (ResolvePod) against a directory holding one HybridJob.
//
// Contracts checked besides crashes: a parsed group spec has roles, each with
// 0 <= min <= max, and survives FormatGroupSpec -> ParseGroupSpec unchanged; a
// parsed pod has a name and requests one pod slot; a pod is a member only if
// it is controlled by the job (same uid) under one of the job's member names,
// and then never asks for more than the job allows; a pod that is not a
// member carries no group spec; resolving twice changes nothing the second time.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <string_view>

#include <hybridjob/api/labels.h>
#include <hybridjob/api/names.h>
#include <hybridjob/scheduler/core/tenancy.h>
#include <hybridjob/scheduler/objects/objects.h>

namespace {

namespace sched = hybridjob::scheduler;

[[noreturn]] void Fail(std::string_view what, std::string_view input) {
  std::cerr << "contract broken: " << what << "\n" << input << "\n";
  std::abort();
}

void CheckGroupSpec(const sched::GroupSpec& spec, std::string_view input) {
  if (spec.roles.empty()) {
    Fail("group spec without roles", input);
  }
  for (const sched::GroupRole& role : spec.roles) {
    if (role.min_replicas < 0 || role.min_replicas > role.max_replicas) {
      Fail("group spec role outside 0 <= min <= max", input);
    }
  }
  auto again = hybridjob::api::ParseGroupSpec(hybridjob::api::FormatGroupSpec(spec));
  if (!again.ok() || !(*again == spec)) {
    Fail("group spec does not survive FormatGroupSpec -> ParseGroupSpec", input);
  }
}

const sched::TenancyDirectory& Directory() {
  static const sched::TenancyDirectory directory = [] {
    sched::TenancyDirectory out;
    sched::TrustedJob job;
    job.namespace_name = "team-a";
    job.name = "train";
    job.uid = "uid-1";
    job.spec.roles = {sched::GroupRole{"ps", 1, 1, 0}, sched::GroupRole{"worker", 2, 4, 0}};
    out.UpsertJob(job);
    out.UpsertPriorityClass(sched::PriorityClassInfo{"high", 1000, true, false});
    return out;
  }();
  return directory;
}

void CheckTrust(sched::PodInfo pod, std::string_view input) {
  const sched::TenancyDirectory& directory = Directory();
  sched::ResolvePod(pod, directory);
  if (sched::ResolvePod(pod, directory)) {
    Fail("resolving a resolved pod changed it", input);
  }
  if (pod.job_name.empty()) {
    if (pod.group_spec.has_value()) {
      Fail("a pod that is not a member carries a group spec", input);
    }
    return;
  }
  const sched::TrustedJob* job = directory.FindJob(pod.namespace_name, pod.job_name);
  if (job == nullptr || !pod.controller || pod.controller->uid != job->uid ||
      pod.name != hybridjob::api::MemberPodName(job->name, pod.role, pod.index, pod.run)) {
    Fail("a pod became a member without its job's controller reference and member name", input);
  }
  if (!pod.group_spec || pod.group_spec->roles.size() != job->spec.roles.size()) {
    Fail("a member's group spec is not its job's", input);
  }
  if (pod.group_spec->ScheduleTimeoutSeconds() > job->spec.ScheduleTimeoutSeconds()) {
    Fail("a member waits longer to assemble than its job allows", input);
  }
  for (size_t i = 0; i < job->spec.roles.size(); ++i) {
    const sched::GroupRole& asked = pod.group_spec->roles[i];
    const sched::GroupRole& allowed = job->spec.roles[i];
    if (asked.name != allowed.name || asked.max_replicas > allowed.max_replicas ||
        asked.min_replicas > allowed.min_replicas || asked.min_replicas > asked.max_replicas) {
      Fail("a member asks for more than its job allows", input);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  if (auto spec = hybridjob::api::ParseGroupSpec(input); spec.ok()) {
    CheckGroupSpec(*spec, input);
  }
  auto pod = sched::ParsePodJson(input);
  if (!pod.ok()) {
    return 0;
  }
  if (pod->name.empty() || pod->requests.pods != 1) {
    Fail("parsed pod without a name or not one pod slot", input);
  }
  if (pod->group_spec) {
    CheckGroupSpec(*pod->group_spec, input);
  }
  CheckTrust(std::move(pod).value(), input);
  return 0;
}
