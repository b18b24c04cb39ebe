#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <string>

#include <hybridjob/api/names.h>
#include <hybridjob/api/validation.h>
#include <hybridjob/common/quantity.h>
#include <hybridjob/common/strings.h>

namespace hybridjob::api {
namespace {

using nlohmann::json;

std::string Indexed(std::string_view path, size_t index) {
  return std::string(path) + "[" + std::to_string(index) + "]";
}

std::string Quoted(std::string_view value) {
  // Appended rather than `"\"" + std::string(value)`: at -O3 g++ 12 inlines
  // that operator+ into a memcpy it wrongly reports as overlapping
  // (-Wrestrict, GCC bug 105329), which -Werror makes fatal in Release builds.
  std::string quoted;
  quoted.reserve(value.size() + 2);
  quoted += '"';
  quoted.append(value);
  quoted += '"';
  return quoted;
}

// "/data/" and "/data" are the same mount point.
std::string NormalizePath(std::string_view path) {
  std::string out(path);
  while (out.size() > 1 && out.back() == '/') {
    out.pop_back();
  }
  return out;
}

bool IsAbsolutePath(std::string_view path) {
  return !path.empty() && path.front() == '/';
}

bool HasControlOrSpace(std::string_view text) {
  return std::any_of(text.begin(), text.end(),
                     [](char c) { return static_cast<unsigned char>(c) <= 0x20 || c == 0x7f; });
}

bool IsLabelValue(std::string_view value) {
  return value.empty() || IsQualifiedNamePart(value);
}

// A quantity as the API server takes it (a string or a number), in
// thousandths; saturated for values too large for that (exabytes).
Result<int64_t> QuantityMilli(const json& value) {
  if (!value.is_string() && !value.is_number()) {
    return Status(StatusCode::kInvalidArgument, "must be a string or a number");
  }
  const std::string text = value.is_string() ? value.get<std::string>() : value.dump();
  Result<int64_t> milli = ParseQuantityMilli(text);
  if (milli.ok()) {
    return milli;
  }
  Result<int64_t> whole = ParseQuantity(text);
  if (!whole.ok()) {
    return whole.status();
  }
  return *whole < 0 ? std::numeric_limits<int64_t>::min() : std::numeric_limits<int64_t>::max();
}

class Validator {
 public:
  explicit Validator(const HybridJob& job) : job_(job), spec_(job.spec) {}

  std::vector<FieldError> Run() {
    CheckMetadata();
    CheckRoles();
    CheckRunPolicy();
    CheckSuccessPolicy();
    CheckVolumes();
    CheckCode();
    CheckArtifacts();
    CheckTensorboard();
    CheckScheduling();
    CheckFramework();
    return std::move(errors_);
  }

 private:
  void Add(std::string field, std::string message) {
    errors_.push_back({std::move(field), std::move(message)});
  }

  void CheckMetadata() {
    const std::string& name = job_.metadata.name;
    if (name.empty()) {
      Add("metadata.name", "required");
    } else if (!IsDns1035Label(name)) {
      Add("metadata.name",
          "must be a lowercase RFC 1035 label (letters, digits and '-', starting with a letter, "
          "at most 63 characters): it names the job's headless Service");
    }
    if (!job_.metadata.namespace_name.empty() && !IsDns1123Label(job_.metadata.namespace_name)) {
      Add("metadata.namespace", "must be a lowercase RFC 1123 label");
    }
  }

  void CheckRoles() {
    const auto& roles = spec_.replica_specs;
    if (roles.empty()) {
      Add("spec.replicaSpecs", "at least one role is required");
      return;
    }
    if (roles.size() > kMaxRoles) {
      Add("spec.replicaSpecs", "at most " + std::to_string(kMaxRoles) + " roles are allowed");
    }
    std::set<std::string> seen;
    int64_t total_min = 0;
    int64_t total_max = 0;
    for (size_t i = 0; i < roles.size(); ++i) {
      const ReplicaSpec& role = roles[i];
      const std::string path = Indexed("spec.replicaSpecs", i);
      if (role.name.empty()) {
        Add(path + ".name", "required");
      } else if (!IsDns1035Label(role.name)) {
        Add(path + ".name",
            "must be a lowercase RFC 1035 label (letters, digits and '-', starting with a "
            "letter): it becomes part of pod names and hostnames");
      } else if (!seen.insert(role.name).second) {
        Add(path + ".name", "duplicate role " + Quoted(role.name));
      }
      const int32_t max = role.EffectiveMaxReplicas();
      if (role.min_replicas < 0) {
        Add(path + ".minReplicas", "must be greater than or equal to 0");
      }
      if (max < 1) {
        Add(path + ".maxReplicas", "must be at least 1");
      } else if (max < role.min_replicas) {
        Add(path + ".maxReplicas", "must be greater than or equal to minReplicas (" +
                                       std::to_string(role.min_replicas) + ")");
      }
      if (max > kMaxReplicasPerRole) {
        Add(path + ".maxReplicas",
            "must be at most " + std::to_string(kMaxReplicasPerRole) + " per role");
      }
      total_min += std::max(role.min_replicas, 0);
      total_max += std::max(max, 0);
      if (role.port && (*role.port < 1 || *role.port > 65535)) {
        Add(path + ".port", "must be between 1 and 65535");
      }
      CheckDerivedPodName(role, path);
      CheckTemplate(role, path);
    }
    if (total_min < 1) {
      Add("spec.replicaSpecs", "at least one role must have minReplicas of 1 or more");
    }
    if (total_max > kMaxReplicasPerJob) {
      Add("spec.replicaSpecs", "maxReplicas over all roles must be at most " +
                                   std::to_string(kMaxReplicasPerJob) + ", got " +
                                   std::to_string(total_max));
    }
  }

  // The longest member hostname (run 0's pod name): a 63-character label.
  void CheckDerivedPodName(const ReplicaSpec& role, const std::string& path) {
    if (job_.metadata.name.empty() || role.name.empty()) {
      return;
    }
    const int32_t max = std::clamp(role.EffectiveMaxReplicas(), 1, kMaxReplicasPerRole);
    std::string longest = MemberHostname(job_.metadata.name, role.name, max - 1);
    if (longest.size() > kMaxDnsLabelLength) {
      Add(path + ".name", "member pod name " + Quoted(longest) + " is " +
                              std::to_string(longest.size()) +
                              " characters; <job>-<role>-<index> must fit in 63 because it is "
                              "the pod's hostname");
    }
  }

  // Mount paths and volume names HybridJob adds to the pods of `role`.
  std::vector<std::pair<std::string, std::string>> InjectedMounts(std::string_view role) const {
    std::vector<std::pair<std::string, std::string>> mounts;  // {volume name, path}
    mounts.emplace_back(kClusterVolumeName, kClusterMountPath);
    if (spec_.code) {
      mounts.emplace_back(kCodeVolumeName, NormalizePath(spec_.code->mount_path));
    }
    if (spec_.framework == Framework::kMPI) {
      mounts.emplace_back(kSshVolumeName, kSshMountPath);
    }
    for (const VolumeSpec& volume : spec_.volumes) {
      if (volume.AppliesTo(role)) {
        mounts.emplace_back(volume.name, NormalizePath(volume.mount_path));
      }
    }
    return mounts;
  }

  void CheckTemplate(const ReplicaSpec& role, const std::string& path) {
    const std::string template_path = path + ".template";
    const json& pod_template = role.pod_template;
    const json* pod_spec = nullptr;
    if (pod_template.is_object()) {
      auto it = pod_template.find("spec");
      if (it != pod_template.end() && it->is_object()) {
        pod_spec = &*it;
      }
    }
    if (pod_template.is_object() && pod_template.contains("metadata")) {
      CheckTemplateMetadata(pod_template["metadata"], template_path + ".metadata");
    }
    if (pod_spec == nullptr) {
      Add(template_path + ".spec.containers",
          "required: a pod template with at least one container");
      return;
    }
    const std::string spec_path = template_path + ".spec";
    auto string_field = [&](std::string_view key) -> std::string {
      auto it = pod_spec->find(key);
      return it != pod_spec->end() && it->is_string() ? it->get<std::string>() : std::string();
    };
    std::string restart_policy = string_field("restartPolicy");
    if (!restart_policy.empty() && restart_policy != "Never") {
      Add(spec_path + ".restartPolicy",
          "must be empty or Never: HybridJob restarts members itself; set " + path +
              ".restartPolicy instead");
    }
    for (std::string_view owned : {"nodeName", "hostname", "subdomain"}) {
      if (!string_field(owned).empty()) {
        Add(spec_path + "." + std::string(owned),
            "must not be set: HybridJob sets it on every member pod");
      }
    }

    const std::vector<std::pair<std::string, std::string>> injected = InjectedMounts(role.name);
    auto volumes = pod_spec->find("volumes");
    if (volumes != pod_spec->end() && volumes->is_array()) {
      for (size_t v = 0; v < volumes->size(); ++v) {
        const json& volume = (*volumes)[v];
        if (!volume.is_object() || !volume.contains("name") || !volume["name"].is_string()) {
          continue;
        }
        const std::string name = volume["name"].get<std::string>();
        for (const auto& [injected_name, injected_path] : injected) {
          if (name == injected_name) {
            Add(Indexed(spec_path + ".volumes", v) + ".name",
                "volume name " + Quoted(name) + " is taken by a volume HybridJob adds");
          }
        }
      }
    }

    auto containers = pod_spec->find("containers");
    if (containers == pod_spec->end() || !containers->is_array() || containers->empty()) {
      Add(spec_path + ".containers", "required: at least one container");
      return;
    }
    CheckContainers(*containers, spec_path + ".containers", injected);
    auto init_containers = pod_spec->find("initContainers");
    if (init_containers != pod_spec->end() && init_containers->is_array()) {
      CheckContainers(*init_containers, spec_path + ".initContainers", injected);
      for (size_t c = 0; c < init_containers->size(); ++c) {
        const json& container = (*init_containers)[c];
        if (spec_.code && container.is_object() &&
            container.value("name", "") == kCodeInitContainerName) {
          Add(Indexed(spec_path + ".initContainers", c) + ".name",
              "name " + Quoted(kCodeInitContainerName) + " is taken by the code init container");
        }
        if (spec_.framework == Framework::kMPI && container.is_object() &&
            container.value("name", "") == kWaitForWorkersContainerName) {
          Add(Indexed(spec_path + ".initContainers", c) + ".name",
              "name " + Quoted(kWaitForWorkersContainerName) +
                  " is taken by the launcher's init container that waits for the workers");
        }
      }
    }
  }

  // The template's labels and annotations go onto every member pod, which the
  // API server would refuse if they were malformed.
  void CheckTemplateMetadata(const json& metadata, const std::string& path) {
    if (!metadata.is_object()) {
      Add(path, "must be an object");
      return;
    }
    for (const char* field : {"labels", "annotations"}) {
      auto entries = metadata.find(field);
      if (entries == metadata.end() || entries->is_null()) {
        continue;
      }
      const std::string entries_path = path + "." + field;
      if (!entries->is_object()) {
        Add(entries_path, "must be a map of strings");
        continue;
      }
      for (const auto& [key, value] : entries->items()) {
        if (!IsQualifiedName(key)) {
          Add(entries_path, "key " + Quoted(key) +
                                " must be a qualified name: [prefix/]name, the name at most 63 "
                                "letters, digits, '-', '_' or '.'");
        }
        if (!value.is_string()) {
          Add(entries_path, "value of " + Quoted(key) + " must be a string");
        } else if (std::string_view(field) == "labels" && !IsLabelValue(value.get<std::string>())) {
          Add(entries_path, "value " + Quoted(value.get<std::string>()) + " of label " +
                                Quoted(key) +
                                " must be empty or at most 63 letters, digits, '-', '_' or '.', "
                                "starting and ending with a letter or digit");
        }
      }
    }
  }

  // Requests and limits must be quantities, and no request above its limit.
  void CheckResources(const json& container, const std::string& path) {
    auto resources = container.find("resources");
    if (resources == container.end() || resources->is_null()) {
      return;
    }
    if (!resources->is_object()) {
      Add(path, "must be an object");
      return;
    }
    std::map<std::string, int64_t> limits;
    for (const char* kind : {"limits", "requests"}) {
      auto entries = resources->find(kind);
      if (entries == resources->end() || entries->is_null()) {
        continue;
      }
      const std::string kind_path = path + "." + kind;
      if (!entries->is_object()) {
        Add(kind_path, "must be a map of resource name to quantity");
        continue;
      }
      for (const auto& [name, value] : entries->items()) {
        Result<int64_t> milli = QuantityMilli(value);
        if (!milli.ok()) {
          // Manifests decoded from YAML may hold invalid UTF-8,
          // which a plain dump() throws on.
          Add(kind_path, Quoted(value.is_string()
                                    ? value.get<std::string>()
                                    : value.dump(-1, ' ', false, json::error_handler_t::replace)) +
                             " for " + Quoted(name) +
                             " is not a resource quantity such as "
                             "\"2\", \"500m\" or \"16Gi\"");
          continue;
        }
        if (*milli < 0) {
          Add(kind_path, Quoted(name) + " must not be negative");
        }
        if (std::string_view(kind) == "limits") {
          limits[name] = *milli;
        } else if (auto limit = limits.find(name);
                   limit != limits.end() && *milli > limit->second) {
          Add(kind_path, Quoted(name) + " must be less than or equal to its limit");
        }
      }
    }
  }

  void CheckEnvAndPorts(const json& container, const std::string& path) {
    auto env = container.find("env");
    if (env != container.end() && !env->is_null()) {
      if (!env->is_array()) {
        Add(path + ".env", "must be a list of {name, value}");
      } else {
        for (size_t e = 0; e < env->size(); ++e) {
          const json& variable = (*env)[e];
          if (!variable.is_object() || !variable.contains("name") ||
              !variable["name"].is_string() || variable["name"].get<std::string>().empty()) {
            Add(Indexed(path + ".env", e) + ".name", "required");
          } else if (variable.contains("value") && !variable["value"].is_string()) {
            Add(Indexed(path + ".env", e) + ".value", "must be a string");
          }
        }
      }
    }
    auto ports = container.find("ports");
    if (ports != container.end() && !ports->is_null()) {
      if (!ports->is_array()) {
        Add(path + ".ports", "must be a list of {containerPort, ...}");
        return;
      }
      for (size_t p = 0; p < ports->size(); ++p) {
        const json& port = (*ports)[p];
        const json* number =
            port.is_object() && port.contains("containerPort") ? &port["containerPort"] : nullptr;
        if (number == nullptr || !number->is_number_integer() || number->get<int64_t>() < 1 ||
            number->get<int64_t>() > 65535) {
          Add(Indexed(path + ".ports", p) + ".containerPort", "must be between 1 and 65535");
        }
      }
    }
  }

  void CheckContainers(const json& containers, const std::string& path,
                       const std::vector<std::pair<std::string, std::string>>& injected) {
    std::set<std::string> names;
    for (size_t c = 0; c < containers.size(); ++c) {
      const json& container = containers[c];
      const std::string container_path = Indexed(path, c);
      if (!container.is_object()) {
        Add(container_path, "must be an object");
        continue;
      }
      auto name = container.find("name");
      if (name == container.end() || !name->is_string() || name->get<std::string>().empty()) {
        Add(container_path + ".name", "required");
      } else if (!IsDns1123Label(name->get<std::string>())) {
        Add(container_path + ".name", "must be a lowercase RFC 1123 label");
      } else if (!names.insert(name->get<std::string>()).second) {
        Add(container_path + ".name", "duplicate container " + Quoted(name->get<std::string>()));
      }
      auto image = container.find("image");
      if (image == container.end() || !image->is_string() || image->get<std::string>().empty()) {
        Add(container_path + ".image", "required");
      }
      CheckResources(container, container_path + ".resources");
      CheckEnvAndPorts(container, container_path);
      auto mounts = container.find("volumeMounts");
      if (mounts == container.end() || !mounts->is_array()) {
        continue;
      }
      for (size_t m = 0; m < mounts->size(); ++m) {
        const json& mount = (*mounts)[m];
        if (!mount.is_object() || !mount.contains("mountPath") || !mount["mountPath"].is_string()) {
          continue;
        }
        const std::string mount_path = NormalizePath(mount["mountPath"].get<std::string>());
        for (const auto& [injected_name, injected_path] : injected) {
          if (mount_path == injected_path) {
            Add(Indexed(container_path + ".volumeMounts", m) + ".mountPath",
                Quoted(mount_path) + " is where HybridJob mounts " + Quoted(injected_name));
          }
        }
      }
    }
  }

  void CheckRunPolicy() {
    const RunPolicy& policy = spec_.run_policy;
    if (policy.backoff_limit < 0) {
      Add("spec.runPolicy.backoffLimit", "must be greater than or equal to 0");
    }
    if (policy.active_deadline_seconds && *policy.active_deadline_seconds < 1) {
      Add("spec.runPolicy.activeDeadlineSeconds", "must be at least 1");
    }
    if (policy.ttl_seconds_after_finished && *policy.ttl_seconds_after_finished < 0) {
      Add("spec.runPolicy.ttlSecondsAfterFinished", "must be greater than or equal to 0");
    }
    if (policy.schedule_timeout_seconds && *policy.schedule_timeout_seconds < 0) {
      Add("spec.runPolicy.scheduleTimeoutSeconds", "must be greater than or equal to 0");
    }
    if (policy.rerun < 0) {
      Add("spec.runPolicy.rerun", "must be greater than or equal to 0");
    }
    if (spec_.run_history_limit < 0 ||
        spec_.run_history_limit > static_cast<int32_t>(kMaxPreviousRuns)) {
      Add("spec.runHistoryLimit", "must be between 0 and " + std::to_string(kMaxPreviousRuns) +
                                      " (status.previousRuns names the newest " +
                                      std::to_string(kMaxPreviousRuns) + " runs), got " +
                                      std::to_string(spec_.run_history_limit));
    }
  }

  void CheckSuccessPolicy() {
    const SuccessPolicy policy = EffectiveSuccessPolicy(spec_);
    const bool explicit_policy = spec_.success_policy.has_value();
    if (explicit_policy && policy.roles.empty()) {
      Add("spec.successPolicy.roles", "must name at least one role");
    }
    for (size_t i = 0; i < policy.roles.size(); ++i) {
      const ReplicaSpec* role = spec_.FindRole(policy.roles[i]);
      if (role == nullptr) {
        if (explicit_policy) {
          Add(Indexed("spec.successPolicy.roles", i), "unknown role " + Quoted(policy.roles[i]));
        }
        continue;
      }
      // A member that is recreated even after it succeeds can never make the
      // job succeed.
      if (role->restart_policy == RestartPolicy::kAlways) {
        Add(explicit_policy ? Indexed("spec.successPolicy.roles", i)
                            : RolePath(role->name) + ".restartPolicy",
            "role " + Quoted(role->name) +
                " decides the job's success, so its restartPolicy cannot be Always");
      }
    }
  }

  void CheckVolumes() {
    if (spec_.volumes.size() > kMaxVolumes) {
      Add("spec.volumes", "at most " + std::to_string(kMaxVolumes) + " volumes are allowed");
    }
    std::set<std::string> names;
    std::set<std::string> paths;
    for (size_t i = 0; i < spec_.volumes.size(); ++i) {
      const VolumeSpec& volume = spec_.volumes[i];
      const std::string path = Indexed("spec.volumes", i);
      if (volume.name.empty()) {
        Add(path + ".name", "required");
      } else if (!IsDns1123Label(volume.name)) {
        Add(path + ".name", "must be a lowercase RFC 1123 label");
      } else if (volume.name == kClusterVolumeName || volume.name == kCodeVolumeName) {
        Add(path + ".name", "name " + Quoted(volume.name) + " is reserved");
      } else if (!names.insert(volume.name).second) {
        Add(path + ".name", "duplicate volume " + Quoted(volume.name));
      }

      const std::string mount_path = NormalizePath(volume.mount_path);
      if (volume.mount_path.empty()) {
        Add(path + ".mountPath", "required");
      } else if (!IsAbsolutePath(volume.mount_path) || mount_path == "/") {
        Add(path + ".mountPath", "must be an absolute path other than /");
      } else if (mount_path == kClusterMountPath) {
        Add(path + ".mountPath", Quoted(kClusterMountPath) + " is reserved for the cluster spec");
      } else if (spec_.code && NormalizePath(spec_.code->mount_path) == mount_path) {
        Add(path + ".mountPath", "conflicts with spec.code.mountPath");
      } else if (!paths.insert(mount_path).second) {
        Add(path + ".mountPath", "duplicate mount path " + Quoted(mount_path));
      }

      for (size_t r = 0; r < volume.roles.size(); ++r) {
        if (spec_.FindRole(volume.roles[r]) == nullptr) {
          Add(Indexed(path + ".roles", r), "unknown role " + Quoted(volume.roles[r]));
        }
      }

      if (volume.existing_claim) {
        if (volume.size) {
          Add(path + ".size", "must not be set together with existingClaim");
        }
        if (volume.storage_class_name) {
          Add(path + ".storageClassName", "must not be set together with existingClaim");
        }
        if (!volume.access_modes.empty()) {
          Add(path + ".accessModes", "must not be set together with existingClaim");
        }
        if (volume.retain) {
          Add(path + ".retain", "must not be set together with existingClaim");
        }
        if (!IsDns1123Subdomain(*volume.existing_claim)) {
          Add(path + ".existingClaim", "must be the name of a PersistentVolumeClaim");
        }
        continue;
      }
      if (!volume.size) {
        Add(path + ".size", "required unless existingClaim is set");
      } else {
        Result<int64_t> bytes = ParseQuantity(*volume.size);
        if (!bytes.ok()) {
          Add(path + ".size",
              "must be a resource quantity such as \"100Gi\": " + bytes.status().message());
        } else if (*bytes <= 0) {
          Add(path + ".size", "must be greater than zero");
        }
      }
      if (volume.storage_class_name && !volume.storage_class_name->empty() &&
          !IsDns1123Subdomain(*volume.storage_class_name)) {
        Add(path + ".storageClassName", "must be the name of a StorageClass");
      }
      for (size_t m = 0; m < volume.access_modes.size(); ++m) {
        const std::string& mode = volume.access_modes[m];
        if (mode != "ReadWriteOnce" && mode != "ReadOnlyMany" && mode != "ReadWriteMany") {
          Add(Indexed(path + ".accessModes", m),
              "unsupported value " + Quoted(mode) +
                  ": must be one of ReadWriteOnce, ReadOnlyMany, ReadWriteMany");
        }
      }
    }
  }

  // endpoint and credentialsSecret of `path` (spec.code, spec.artifacts): an
  // S3-compatible store and the Secret for it, only with an s3:// URL.
  void CheckS3Access(const std::string& path, bool s3, std::string_view url_field,
                     const std::optional<std::string>& endpoint,
                     const std::optional<std::string>& credentials_secret) {
    const std::string only_with_s3 = "goes with an s3:// " + std::string(url_field);
    if (endpoint) {
      if (!s3) {
        Add(path + ".endpoint", only_with_s3);
      } else if ((endpoint->rfind("http://", 0) != 0 && endpoint->rfind("https://", 0) != 0) ||
                 endpoint->size() <= endpoint->find("://") + 3 || HasControlOrSpace(*endpoint)) {
        Add(path + ".endpoint",
            "must be an http:// or https:// URL without spaces or control characters");
      }
    }
    if (credentials_secret) {
      if (!s3) {
        Add(path + ".credentialsSecret", only_with_s3);
      } else if (!IsDns1123Subdomain(*credentials_secret)) {
        Add(path + ".credentialsSecret", "must be the name of a Secret (a DNS subdomain)");
      }
    }
  }

  void CheckArtifacts() {
    if (!spec_.artifacts) {
      return;
    }
    const ArtifactsSpec& a = *spec_.artifacts;
    const std::string path = "spec.artifacts";
    if (a.volume.empty()) {
      Add(path + ".volume", "required: the job volume whose files are uploaded");
    } else if (spec_.FindVolume(a.volume) == nullptr) {
      Add(path + ".volume", Quoted(a.volume) + " is not a volume of spec.volumes");
    }
    if (a.paths.empty()) {
      Add(path + ".paths", "required: at least one file or directory of the volume");
    }
    for (size_t i = 0; i < a.paths.size(); ++i) {
      const std::string& p = a.paths[i];
      // Components are names: none empty (but a trailing "/"), ".", or "..".
      bool plain = !p.empty() && p.front() != '/' && !HasControlOrSpace(p);
      std::string_view inside = p;
      if (!inside.empty() && inside.back() == '/') {
        inside.remove_suffix(1);  // a directory may be written with its slash
      }
      for (std::string_view part : Split(inside, '/')) {
        plain = plain && !part.empty() && part != "." && part != "..";
      }
      if (!plain) {
        Add(Indexed(path + ".paths", i),
            "must be a relative path inside the volume, without \"..\", \".\", spaces or "
            "control characters");
      }
    }
    const std::string& destination = a.destination;
    const bool s3 = destination.rfind("s3://", 0) == 0;
    const bool http = destination.rfind("http://", 0) == 0 || destination.rfind("https://", 0) == 0;
    const size_t rest = destination.find("://") == std::string::npos ? std::string::npos
                                                                     : destination.find("://") + 3;
    if (!s3 && !http) {
      Add(path + ".destination",
          "must be an http:// or https:// URL (files are PUT below it) "
          "or s3://<bucket>[/<prefix>]");
    } else if (rest >= destination.size() || destination[rest] == '/' ||
               HasControlOrSpace(destination)) {
      Add(path + ".destination", "must name a host (or, for s3://, a bucket), without spaces");
    }
    CheckS3Access(path, s3, "destination", a.endpoint, a.credentials_secret);
    if (a.image && a.image->empty()) {
      Add(path + ".image", "must not be empty when set");
    }
    if (a.deadline_seconds < 1) {
      Add(path + ".deadlineSeconds", "must be at least 1");
    }
  }

  void CheckCode() {
    if (!spec_.code) {
      return;
    }
    const CodeSpec& code = *spec_.code;
    const std::string& source = code.source;
    if (source.empty()) {
      Add("spec.code.source", "required");
    } else {
      size_t scheme_end = source.find("://");
      std::string scheme = scheme_end == std::string::npos ? "" : source.substr(0, scheme_end);
      std::string rest = scheme_end == std::string::npos ? "" : source.substr(scheme_end + 3);
      if (scheme != "http" && scheme != "https" && scheme != "s3") {
        Add("spec.code.source", "must be an http://, https:// or s3:// URL");
      } else if (rest.empty() || rest.front() == '/') {
        Add("spec.code.source", "must name a host (or, for s3://, a bucket)");
      } else if (scheme == "s3" && rest.find('/') == std::string::npos) {
        Add("spec.code.source", "s3:// URLs must name an object: s3://<bucket>/<key>");
      }
      if (HasControlOrSpace(source)) {
        Add("spec.code.source", "must not contain spaces or control characters");
      }
    }
    const std::string mount_path = NormalizePath(code.mount_path);
    if (!IsAbsolutePath(code.mount_path) || mount_path == "/") {
      Add("spec.code.mountPath", "must be an absolute path other than /");
    } else if (mount_path == kClusterMountPath) {
      Add("spec.code.mountPath", Quoted(kClusterMountPath) + " is reserved for the cluster spec");
    }
    CheckS3Access("spec.code", source.rfind("s3://", 0) == 0, "source", code.endpoint,
                  code.credentials_secret);
    if (code.image && code.image->empty()) {
      Add("spec.code.image", "must not be empty when set");
    }
  }

  void CheckTensorboard() {
    if (!spec_.tensorboard) {
      return;
    }
    const TensorboardSpec& tensorboard = *spec_.tensorboard;
    if (tensorboard.log_dir.empty()) {
      Add("spec.tensorboard.logDir", "required");
    }
    if (tensorboard.service_type != "ClusterIP" && tensorboard.service_type != "NodePort" &&
        tensorboard.service_type != "LoadBalancer") {
      Add("spec.tensorboard.serviceType", "unsupported value " + Quoted(tensorboard.service_type) +
                                              ": must be one of ClusterIP, NodePort, LoadBalancer");
    }
    if (tensorboard.image && tensorboard.image->empty()) {
      Add("spec.tensorboard.image", "must not be empty when set");
    }
    if (!job_.metadata.name.empty() &&
        TensorboardName(job_.metadata.name).size() > kMaxDnsLabelLength) {
      Add("spec.tensorboard", "the TensorBoard Service name " +
                                  Quoted(TensorboardName(job_.metadata.name)) +
                                  " would exceed 63 characters; use a shorter job name");
    }
  }

  void CheckScheduling() {
    if (spec_.queue && spec_.queue->empty()) {
      Add("spec.queue", "must not be empty when set");
    } else if (spec_.queue && spec_.queue->size() > kMaxDnsSubdomainLength) {
      Add("spec.queue", "must be at most 253 characters");
    }
    if (spec_.topology) {
      CheckTopology(*spec_.topology, "spec.topology", /*is_role=*/false);
    }
    for (size_t i = 0; i < spec_.replica_specs.size(); ++i) {
      if (const std::optional<TopologySpec>& topology = spec_.replica_specs[i].topology) {
        CheckTopology(*topology, Indexed("spec.replicaSpecs", i) + ".topology", /*is_role=*/true);
      }
    }
    if (spec_.scheduler_name.empty()) {
      Add("spec.schedulerName", "must not be empty");
    } else if (!IsDns1123Subdomain(spec_.scheduler_name)) {
      Add("spec.schedulerName", "must be a lowercase RFC 1123 subdomain");
    }
  }

  // Whether the level is one the scheduler is configured with is the
  // scheduler's to say (the job waits with the reason): the controller
  // cannot know its configuration.
  void CheckTopology(const TopologySpec& topology, const std::string& path, bool is_role) {
    if (topology.mode == TopologyMode::kNone) {
      if (!is_role) {
        Add(path + ".mode", "None is only for a role's override (leave spec.topology unset)");
      } else if (!topology.level.empty()) {
        Add(path + ".level", "must be empty with mode None");
      }
      return;
    }
    if (topology.level.empty()) {
      Add(path + ".level", "required: a node label key among the scheduler's topology levels");
    } else if (!IsQualifiedName(topology.level)) {
      Add(path + ".level", "must be a label key ([prefix/]name), got " + Quoted(topology.level));
    }
  }

  // Asks for a role that must have exactly one member.
  void RequireSingleton(std::string_view role_name, std::string_view why) {
    const ReplicaSpec* role = spec_.FindRole(role_name);
    if (role == nullptr) {
      Add("spec.replicaSpecs", std::string(why) + ": add a role named " + Quoted(role_name));
      return;
    }
    if (role->min_replicas != 1 || role->EffectiveMaxReplicas() != 1) {
      Add(RolePath(role_name), "role " + Quoted(role_name) + " must have exactly one replica");
    }
  }

  void AtMostOne(std::string_view role_name) {
    const ReplicaSpec* role = spec_.FindRole(role_name);
    if (role != nullptr && role->EffectiveMaxReplicas() > 1) {
      Add(RolePath(role_name) + ".maxReplicas",
          "role " + Quoted(role_name) + " can have at most one replica");
    }
  }

  std::string RolePath(std::string_view role_name) const {
    for (size_t i = 0; i < spec_.replica_specs.size(); ++i) {
      if (spec_.replica_specs[i].name == role_name) {
        return Indexed("spec.replicaSpecs", i);
      }
    }
    return "spec.replicaSpecs";
  }

  void CheckFramework() {
    switch (spec_.framework) {
      case Framework::kTensorFlow:
        if (spec_.FindRole("chief") != nullptr && spec_.FindRole("master") != nullptr) {
          Add("spec.replicaSpecs", "a tensorflow job has a chief or a master role, not both");
        }
        AtMostOne("chief");
        AtMostOne("master");
        break;
      case Framework::kPyTorch:
        if (spec_.FindRole("master") != nullptr && spec_.FindRole("chief") != nullptr) {
          Add("spec.replicaSpecs", "a pytorch job has a master or a chief role, not both");
        }
        AtMostOne("master");
        AtMostOne("chief");
        if (spec_.FindRole("master") == nullptr && spec_.FindRole("chief") == nullptr &&
            spec_.FindRole("worker") == nullptr) {
          Add("spec.replicaSpecs",
              "a pytorch job needs a master, chief or worker role to provide MASTER_ADDR");
        }
        if (const ReplicaSpec* worker = spec_.FindRole("worker");
            worker != nullptr && spec_.FindRole("master") == nullptr &&
            spec_.FindRole("chief") == nullptr && worker->min_replicas < 1) {
          Add(RolePath("worker") + ".minReplicas",
              "must be at least 1: worker 0 is the master of a pytorch job without a master role");
        }
        break;
      case Framework::kMXNet:
        RequireSingleton("scheduler", "an mxnet job needs a scheduler (DMLC_PS_ROOT_URI)");
        for (size_t i = 0; i < spec_.replica_specs.size(); ++i) {
          const std::string& name = spec_.replica_specs[i].name;
          if (name != "scheduler" && name != "server" && name != "worker") {
            Add(Indexed("spec.replicaSpecs", i) + ".name",
                "an mxnet role must be scheduler, server or worker (it becomes DMLC_ROLE)");
          }
        }
        break;
      case Framework::kMPI:
        RequireSingleton("launcher", "an mpi job needs a launcher that runs mpirun");
        if (spec_.replica_specs.size() < 2) {
          Add("spec.replicaSpecs", "an mpi job needs at least one role besides the launcher");
        }
        break;
      case Framework::kGeneric:
        break;
    }
  }

  const HybridJob& job_;
  const HybridJobSpec& spec_;
  std::vector<FieldError> errors_;
};

}  // namespace

std::vector<FieldError> Validate(const HybridJob& job) {
  return Validator(job).Run();
}

std::string JoinErrors(const std::vector<FieldError>& errors) {
  std::string out;
  for (const FieldError& error : errors) {
    out += out.empty() ? "" : "; ";
    out += error.ToString();
  }
  return out;
}

}  // namespace hybridjob::api
