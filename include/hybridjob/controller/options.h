// Controller configuration that shapes the objects the planner asks for.
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include <hybridjob/common/status.h>

namespace hybridjob::controller {

struct PlannerOptions {
  // Image of the init container that fetches spec.code.source when the job
  // names none. It needs /bin/sh, tar and unzip, plus curl or wget (and the aws
  // CLI for private s3:// objects).
  std::string code_fetcher_image = "curlimages/curl:8.5.0";
  // TensorBoard image when spec.tensorboard.image is unset.
  std::string tensorboard_image = "tensorflow/tensorflow:2.15.0";
  // Delay before recreating a restarted member: base * 2^(restarts-1), capped.
  std::chrono::seconds restart_backoff_base{10};
  std::chrono::seconds restart_backoff_cap{360};
  // Extended resources that count as GPUs (the scheduler's gpuResources):
  // an MPI hostfile gives each member one slot per GPU of any of them.
  std::vector<std::string> gpu_resources = {"nvidia.com/gpu"};
  // The schedulers a job may name in spec.schedulerName: any other would place
  // its members outside every queue, guarantee, max and gang. A job that names
  // one not listed is Invalid before it starts and gets no pod.
  std::vector<std::string> allowed_scheduler_names = {"gang-scheduler"};
};

// The --allowed-scheduler-names flag: comma-separated scheduler names (DNS-1123
// subdomains), at least one, no repeats.
Result<std::vector<std::string>> ParseSchedulerNames(std::string_view text);

// Why a job that has not started may not run with its spec.schedulerName:
// empty when `allowed` lists it.
std::string SchedulerNameRefusal(std::string_view scheduler_name,
                                 const std::vector<std::string>& allowed);

// The --gpu-resources flag: comma-separated extended resource names, each
// with a domain prefix (nvidia.com/gpu, amd.com/gpu, nvidia.com/mig-1g.10gb),
// at least one, no repeats.
Result<std::vector<std::string>> ParseGpuResources(std::string_view text);

}  // namespace hybridjob::controller
