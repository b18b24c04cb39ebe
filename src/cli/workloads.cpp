#include <algorithm>

#include <hybridjob/api/labels.h>
#include <hybridjob/api/names.h>
#include <hybridjob/cli/workloads.h>
#include <hybridjob/controller/children.h>
#include <hybridjob/controller/options.h>

namespace hybridjob::cli {
namespace {

using nlohmann::json;

std::string Quoted(const std::string& text) {
  return "\"" + text + "\"";
}

std::string VolumeNames(const api::HybridJob& job) {
  std::string names;
  for (const api::VolumeSpec& volume : job.spec.volumes) {
    names += (names.empty() ? "" : ", ") + volume.name;
  }
  return names.empty() ? "none" : names;
}

// A Service's name is an RFC 1035 label; a Deployment's pods are named after
// it with a suffix, so the same limit keeps both valid.
Status CheckName(const std::string& name, const std::string& flag_hint) {
  if (!api::IsDns1035Label(name)) {
    return InvalidArgument(Quoted(name) + " is not a valid name for a Deployment and its Service " +
                           "(lowercase letters, digits and '-', starting with a letter, at most " +
                           "63 characters)" + flag_hint);
  }
  return Status::Ok();
}

json Labels(const api::HybridJob& job, std::string_view key, const std::string& name,
            std::string_view component) {
  return {{std::string(kFromJobLabel), job.metadata.name},
          {std::string(key), name},
          {"app.kubernetes.io/name", name},
          {"app.kubernetes.io/component", component},
          {"app.kubernetes.io/managed-by", "kubectl-hybridjob"}};
}

json Meta(const api::HybridJob& job, const std::string& name, const json& labels) {
  return {{"name", name},
          {"namespace", controller::JobNamespace(job)},
          {"labels", labels},
          {"annotations", {{"batch.hybridjob.io/source-job-uid", job.metadata.uid}}}};
}

json ServiceFor(const api::HybridJob& job, const std::string& name, const json& labels,
                std::string_view selector_key, int32_t port) {
  return {{"apiVersion", "v1"},
          {"kind", "Service"},
          {"metadata", Meta(job, name, labels)},
          {"spec",
           {{"selector", {{std::string(selector_key), name}}},
            {"ports",
             {{{"name", "http"}, {"port", port}, {"targetPort", "http"}, {"protocol", "TCP"}}}}}}};
}

json ClaimVolume(const std::string& volume_name, const std::string& claim, bool read_only) {
  json source = {{"claimName", claim}};
  if (read_only) {
    source["readOnly"] = true;
  }
  return {{"name", volume_name}, {"persistentVolumeClaim", std::move(source)}};
}

json DeploymentFor(const api::HybridJob& job, const std::string& name, const json& labels,
                   std::string_view selector_key, int32_t replicas, json pod_spec) {
  json pod_labels = labels;
  return {
      {"apiVersion", "apps/v1"},
      {"kind", "Deployment"},
      {"metadata", Meta(job, name, labels)},
      {"spec",
       {{"replicas", replicas},
        {"selector", {{"matchLabels", {{std::string(selector_key), name}}}}},
        {"template", {{"metadata", {{"labels", pod_labels}}}, {"spec", std::move(pod_spec)}}}}}};
}

// The node a PersistentVolume's node affinity pins it to (one term,
// kubernetes.io/hostname In one node: a local or hostPath volume), if any.
std::string PinnedNode(const json& persistent_volume) {
  const json* terms = nullptr;
  if (persistent_volume.is_object() && persistent_volume.contains("spec")) {
    const json& spec = persistent_volume["spec"];
    if (spec.contains("nodeAffinity") && spec["nodeAffinity"].contains("required")) {
      const json& required = spec["nodeAffinity"]["required"];
      if (required.contains("nodeSelectorTerms") && required["nodeSelectorTerms"].is_array()) {
        terms = &required["nodeSelectorTerms"];
      }
    }
  }
  if (terms == nullptr || terms->size() != 1) {
    return "";  // several terms are alternatives: not one node
  }
  for (const json& expression : (*terms)[0].value("matchExpressions", json::array())) {
    const json values = expression.value("values", json::array());
    if (expression.value("key", "") == "kubernetes.io/hostname" &&
        expression.value("operator", "") == "In" && values.size() == 1 && values[0].is_string()) {
      return values[0].get<std::string>();
    }
  }
  return "";
}

}  // namespace

Result<std::string> ChooseAutoscalingVersion(const json& autoscaling_group) {
  std::vector<std::string> served;
  if (autoscaling_group.is_object() && autoscaling_group.contains("versions") &&
      autoscaling_group["versions"].is_array()) {
    for (const json& version : autoscaling_group["versions"]) {
      if (version.is_object() && version.contains("groupVersion") &&
          version["groupVersion"].is_string()) {
        served.push_back(version["groupVersion"].get<std::string>());
      }
    }
  }
  for (const char* wanted :
       {"autoscaling/v2", "autoscaling/v2beta2", "autoscaling/v2beta1", "autoscaling/v1"}) {
    if (std::find(served.begin(), served.end(), wanted) != served.end()) {
      return std::string(wanted);
    }
  }
  return NotFound(
      "the API server serves no HorizontalPodAutoscaler version this command writes "
      "(autoscaling/v2, v2beta2, v2beta1 or v1)");
}

Result<ClaimPlacement> PlaceClaim(const api::HybridJob& job, const api::VolumeSpec& volume,
                                  const json& claim, const json& persistent_volume) {
  ClaimPlacement placement;
  placement.claim = controller::ClaimName(job, volume);
  placement.retained = volume.existing_claim.has_value() || volume.retain;
  if (!claim.is_object() || !claim.contains("metadata")) {
    return NotFound("claim " + placement.claim + " of volume " + volume.name + " of job " +
                    job.metadata.name +
                    " does not exist: the controller creates it with the job's members");
  }
  const json status = claim.value("status", json::object());
  if (status.value("phase", "") != "Bound") {
    return Status(
        StatusCode::kConflict,
        "claim " + placement.claim + " of volume " + volume.name + " is not bound yet (" +
            status.value("phase", "Pending") +
            "): with a WaitForFirstConsumer class it gets its node when the job's first member "
            "mounts it, and a pod made here would choose that node for the job; run the job first");
  }
  for (const json& mode : claim["spec"].value("accessModes", json::array())) {
    if (mode == "ReadWriteOnce" || mode == "ReadWriteOncePod") {
      placement.read_write_once = true;
    }
  }
  placement.node = PinnedNode(persistent_volume);
  return placement;
}

std::vector<std::string> PlacementNotes(const std::string& what, const ClaimPlacement& placement,
                                        const std::string& job) {
  std::vector<std::string> notes;
  if (!placement.node.empty()) {
    notes.push_back("the pods of " + what + " can run only on node " + placement.node +
                    ", where the volume of claim " + placement.claim + " is" +
                    (placement.read_write_once ? " (ReadWriteOnce, node-local)" : " (node-local)") +
                    ": every replica runs there");
  } else if (placement.read_write_once) {
    notes.push_back("claim " + placement.claim + " is ReadWriteOnce: the pods of " + what +
                    " run on the one node that mounts it, beside any member of job " + job +
                    " that still does");
  }
  if (!placement.retained) {
    notes.push_back("claim " + placement.claim + " is deleted with job " + job +
                    " (the volume has no retain: true): " + what + " then loses it");
  }
  return notes;
}

Result<std::vector<json>> BuildServeObjects(const api::HybridJob& job, const ServeOptions& options,
                                            const std::string& autoscaling_version) {
  const std::string name = options.name.empty() ? job.metadata.name + "-serve" : options.name;
  if (Status s = CheckName(name, options.name.empty() ? ": name one with --name" : ""); !s.ok()) {
    return s;
  }
  const api::VolumeSpec* volume = job.spec.FindVolume(options.volume);
  if (volume == nullptr) {
    return NotFound("job " + job.metadata.name + " has no volume " + Quoted(options.volume) +
                    " (its volumes: " + VolumeNames(job) + ")");
  }
  if (options.model_path.empty() || options.model_path[0] != '/') {
    return InvalidArgument("--model-path must be an absolute path, got " +
                           Quoted(options.model_path));
  }
  if (options.image.empty()) {
    return InvalidArgument("--image is required: the model server's image");
  }
  if (options.port < 1 || options.port > 65535) {
    return InvalidArgument("--port must be between 1 and 65535, got " +
                           std::to_string(options.port));
  }
  const bool range = options.min_replicas.has_value() || options.max_replicas.has_value();
  if (range && options.replicas) {
    return InvalidArgument(
        "--replicas is a fixed count; --min-replicas and --max-replicas ask for an autoscaler: "
        "give one or the other");
  }
  const int32_t min = options.min_replicas.value_or(options.replicas.value_or(1));
  const int32_t max = options.max_replicas.value_or(min);
  if (min < 1 || max < min) {
    return InvalidArgument(
        "replicas must be at least 1 and --max-replicas at least "
        "--min-replicas, got " +
        std::to_string(min) + " and " + std::to_string(max));
  }
  if (max > min && (options.cpu_percent < 1 || options.cpu_percent > 1000)) {
    return InvalidArgument("--cpu-percent must be between 1 and 1000, got " +
                           std::to_string(options.cpu_percent));
  }
  const json labels = Labels(job, kServeLabel, name, "serving");
  const std::string claim = controller::ClaimName(job, *volume);
  json container = {
      {"name", "server"},
      {"image", options.image},
      {"ports", {{{"name", "http"}, {"containerPort", options.port}, {"protocol", "TCP"}}}},
      {"env",
       {{{"name", "HYBRIDJOB_MODEL_PATH"}, {"value", options.model_path}},
        {{"name", "HYBRIDJOB_JOB_NAME"}, {"value", job.metadata.name}}}},
      {"volumeMounts",
       {{{"name", "model"}, {"mountPath", options.model_path}, {"readOnly", true}}}},
      {"readinessProbe",
       {{"tcpSocket", {{"port", "http"}}}, {"periodSeconds", 2}, {"failureThreshold", 3}}},
      {"resources", {{"requests", {{"cpu", options.cpu_request}}}}},
  };
  if (!options.command.empty()) {
    container["command"] = options.command;
  }
  json pod_spec = {{"containers", json::array({std::move(container)})},
                   {"volumes", json::array({ClaimVolume("model", claim, /*read_only=*/true)})},
                   {"automountServiceAccountToken", false}};
  std::vector<json> objects;
  objects.push_back(DeploymentFor(job, name, labels, kServeLabel, min, std::move(pod_spec)));
  objects.push_back(ServiceFor(job, name, labels, kServeLabel, options.port));
  if (max > min) {
    json spec = {
        {"scaleTargetRef", {{"apiVersion", "apps/v1"}, {"kind", "Deployment"}, {"name", name}}},
        {"minReplicas", min},
        {"maxReplicas", max}};
    // The CPU target, as each version spells it.
    if (autoscaling_version == "autoscaling/v1") {
      spec["targetCPUUtilizationPercentage"] = options.cpu_percent;
    } else if (autoscaling_version == "autoscaling/v2beta1") {
      spec["metrics"] = {
          {{"type", "Resource"},
           {"resource", {{"name", "cpu"}, {"targetAverageUtilization", options.cpu_percent}}}}};
    } else {
      spec["metrics"] = {
          {{"type", "Resource"},
           {"resource",
            {{"name", "cpu"},
             {"target", {{"type", "Utilization"}, {"averageUtilization", options.cpu_percent}}}}}}};
    }
    objects.push_back({{"apiVersion", autoscaling_version},
                       {"kind", "HorizontalPodAutoscaler"},
                       {"metadata", Meta(job, name, labels)},
                       {"spec", std::move(spec)}});
  }
  return objects;
}

Result<std::vector<json>> BuildNotebookObjects(const api::HybridJob& job,
                                               const NotebookOptions& options,
                                               const std::string& token) {
  const std::string name = options.name.empty() ? job.metadata.name + "-notebook" : options.name;
  if (Status s = CheckName(name, options.name.empty() ? ": name one with --name" : ""); !s.ok()) {
    return s;
  }
  if (options.port < 1 || options.port > 65535) {
    return InvalidArgument("--port must be between 1 and 65535, got " +
                           std::to_string(options.port));
  }
  const json labels = Labels(job, kNotebookLabel, name, "notebook");
  const std::string secret = name + "-token";
  // The job's code, where its members have it: the directory the notebook opens.
  const std::string root = job.spec.code               ? job.spec.code->mount_path
                           : !job.spec.volumes.empty() ? job.spec.volumes[0].mount_path
                                                       : std::string("/home/jovyan");
  json container = {
      {"name", "notebook"},
      {"image", options.image},
      // Explicit, so that any image with Jupyter runs it the same way.
      // --allow-root: Jupyter refuses to start as root without it, and an
      // image built to run as root, or a runtime that runs it so, would then
      // crash-loop; as the Jupyter images' own user it changes nothing. The
      // token guards the server either way.
      {"command",
       {"jupyter", "notebook", "--no-browser", "--allow-root", "--ip=0.0.0.0",
        "--port=" + std::to_string(options.port), "--notebook-dir=" + root}},
      {"ports", {{{"name", "http"}, {"containerPort", options.port}, {"protocol", "TCP"}}}},
      {"env",
       {{{"name", "JUPYTER_TOKEN"},
         {"valueFrom", {{"secretKeyRef", {{"name", secret}, {"key", "token"}}}}}},
        {{"name", "HYBRIDJOB_JOB_NAME"}, {"value", job.metadata.name}}}},
      {"readinessProbe",
       {{"tcpSocket", {{"port", "http"}}}, {"periodSeconds", 2}, {"failureThreshold", 3}}},
  };
  json volumes = json::array();
  for (const api::VolumeSpec& volume : job.spec.volumes) {
    const std::string claim = controller::ClaimName(job, volume);
    volumes.push_back(ClaimVolume(volume.name, claim, /*read_only=*/false));
    container["volumeMounts"].push_back({{"name", volume.name}, {"mountPath", volume.mount_path}});
  }
  json pod_spec = {{"automountServiceAccountToken", false}};
  if (job.spec.code) {
    controller::PlannerOptions planner;
    if (!options.code_fetcher_image.empty()) {
      planner.code_fetcher_image = options.code_fetcher_image;
    }
    json first = job.spec.replica_specs.empty()
                     ? json::object()
                     : job.spec.replica_specs[0].pod_template.value("spec", json::object());
    const json first_container = first.contains("containers") && first["containers"].is_array() &&
                                         !first["containers"].empty()
                                     ? first["containers"][0]
                                     : json::object();
    pod_spec["initContainers"] =
        json::array({controller::BuildCodeFetcher(job, first_container, planner)});
    volumes.push_back({{"name", api::kCodeVolumeName}, {"emptyDir", json::object()}});
    container["volumeMounts"].push_back(
        {{"name", api::kCodeVolumeName}, {"mountPath", job.spec.code->mount_path}});
  }
  pod_spec["containers"] = json::array({std::move(container)});
  if (!volumes.empty()) {
    pod_spec["volumes"] = std::move(volumes);
  }
  std::vector<json> objects;
  objects.push_back({{"apiVersion", "v1"},
                     {"kind", "Secret"},
                     {"metadata", Meta(job, secret, labels)},
                     {"type", "Opaque"},
                     {"stringData", {{"token", token}}}});
  objects.push_back(DeploymentFor(job, name, labels, kNotebookLabel, 1, std::move(pod_spec)));
  objects.push_back(ServiceFor(job, name, labels, kNotebookLabel, options.port));
  return objects;
}

}  // namespace hybridjob::cli
