// What `kubectl hybridjob serve` and `notebook` make from a job: standard
// Kubernetes objects (Deployment, Service, HorizontalPodAutoscaler, Secret)
// that mount the job's claims. Pure: the commands read the job, its claims
// and the server's API versions, and pass them in.
//
// The objects are labelled with the job but not owned by it: they outlive
// its deletion. They never carry batch.hybridjob.io/job-name, which makes a
// pod part of the job's gang.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <hybridjob/api/types.h>
#include <hybridjob/cli/output.h>
#include <hybridjob/common/status.h>
#include <hybridjob/k8s/api_client.h>

namespace hybridjob::cli {

// On every object either command makes: the job it serves (value: its name).
inline constexpr std::string_view kFromJobLabel = "batch.hybridjob.io/from-job";
// On a serving Deployment, its pods and Service, and its autoscaler (value:
// the Deployment's name); the Service's selector.
inline constexpr std::string_view kServeLabel = "batch.hybridjob.io/serve";
// The same for a notebook.
inline constexpr std::string_view kNotebookLabel = "batch.hybridjob.io/notebook";

struct ServeOptions {
  std::string name;  // default <job>-serve
  std::string volume;
  std::string model_path;  // where the volume is mounted, read-only
  std::string image;
  std::vector<std::string> command;  // empty: the image's own
  int32_t port = 0;
  // Fixed replicas, or an autoscaler between min and max at a CPU target.
  std::optional<int32_t> replicas;
  std::optional<int32_t> min_replicas;
  std::optional<int32_t> max_replicas;
  int32_t cpu_percent = 80;
  std::string cpu_request = "100m";  // what the CPU target is a percentage of
};

// The autoscaling/... version to write an autoscaler in: autoscaling/v2 where
// the server serves it, else the newest it serves (v2beta2, v2beta1, v1), from
// the group's discovery document (GET /apis/autoscaling). NotFound when it
// serves none of them.
Result<std::string> ChooseAutoscalingVersion(const nlohmann::json& autoscaling_group);

// The claim a job volume mounts, as the cluster has it: where pods that
// mount it may run.
struct ClaimPlacement {
  std::string claim;
  // A node the claim's volume is pinned to (a node-local PersistentVolume's
  // node affinity on kubernetes.io/hostname), when it is.
  std::string node;
  bool read_write_once = false;  // ReadWriteOnce or ReadWriteOncePod
  bool retained = true;          // outlives the job (an existing claim, or retain: true)
};

// Where pods mounting `volume` can run, from its claim and bound
// PersistentVolume (null when absent or not yet bound). A claim that does
// not exist or is not bound yet is an error that says why: the first pod to
// mount a WaitForFirstConsumer claim would choose its node for the job.
Result<ClaimPlacement> PlaceClaim(const api::HybridJob& job, const api::VolumeSpec& volume,
                                  const nlohmann::json& claim,
                                  const nlohmann::json& persistent_volume);

// What the user should know about where the pods run (the node a node-local
// ReadWriteOnce claim pins them to, a claim deleted with the job): one
// sentence each.
std::vector<std::string> PlacementNotes(const std::string& what, const ClaimPlacement& placement,
                                        const std::string& job);

// Deployment, Service and, when max_replicas is above min_replicas, an
// autoscaler in `autoscaling_version`; in the job's namespace.
Result<std::vector<nlohmann::json>> BuildServeObjects(const api::HybridJob& job,
                                                      const ServeOptions& options,
                                                      const std::string& autoscaling_version);

struct NotebookOptions {
  std::string name;  // default <job>-notebook
  std::string image = "jupyter/base-notebook";
  int32_t port = 8888;
  std::string code_fetcher_image;  // for a job with spec.code; default: the controller's
};

// Secret <name>-token holding `token` (Jupyter's login token), a Deployment
// running Jupyter with every job volume's claim at its mount path and the
// job's code fetched as its members get it, and a Service.
Result<std::vector<nlohmann::json>> BuildNotebookObjects(const api::HybridJob& job,
                                                         const NotebookOptions& options,
                                                         const std::string& token);

// How serve and notebook write and what they print, as kubectl create does.
struct WriteOptions {
  std::string namespace_name = "default";
  bool dry_run = false;  // --dry-run=client: print, write nothing
  // Empty: "<kind>/<name> created" lines; "name": "<kind>/<name>" lines;
  // "json" or "yaml": the objects (a List), as written or as they would be.
  std::string output;
};

// Checks --output and --dry-run as kubectl spells them ("client" only: the
// server's dry run is not offered).
Result<WriteOptions> ParseWriteOptions(const std::string& namespace_name, const std::string& output,
                                       const std::string& dry_run);

// kubectl hybridjob serve JOB: reads the job, its volume's claim (and the
// claim's PersistentVolume where it may) and, for an autoscaler, the
// autoscaling versions the server serves; then creates the objects or prints
// them. Notes on where the pods run, and how to delete the objects, go to `err`.
Status RunServe(k8s::ApiClient& client, const std::string& job, const ServeOptions& options,
                const WriteOptions& write, std::ostream& out, std::ostream& err);

// kubectl hybridjob notebook JOB: the same for a notebook, with a fresh login
// token; prints how to reach it (kubectl port-forward) and read the token.
Status RunNotebook(k8s::ApiClient& client, const std::string& job, const NotebookOptions& options,
                   const WriteOptions& write, std::ostream& out, std::ostream& err);

}  // namespace hybridjob::cli
