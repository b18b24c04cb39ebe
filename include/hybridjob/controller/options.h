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
};

// The --gpu-resources flag: comma-separated extended resource names, each
// with a domain prefix (nvidia.com/gpu, amd.com/gpu, nvidia.com/mig-1g.10gb),
// at least one, no repeats.
Result<std::vector<std::string>> ParseGpuResources(std::string_view text);

}  // namespace hybridjob::controller
