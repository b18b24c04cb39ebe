#include <algorithm>
#include <set>

#include <hybridjob/api/time.h>
#include <hybridjob/common/json_fields.h>
#include <hybridjob/common/strings.h>
#include <hybridjob/sim/exec_pod.h>

namespace hybridjob::sim {
namespace {

using nlohmann::json;

// A path inside a volume or container: relative ones may not climb out.
bool ClimbsOut(const std::string& path) {
  for (const auto& part : std::filesystem::path(path)) {
    if (part == "..") {
      return true;
    }
  }
  return false;
}

ExecVolume::Projection ReadProjection(JsonFields& fields, const json& source, ExecVolume::Kind kind,
                                      const std::string& path) {
  ExecVolume::Projection projection;
  projection.kind = kind;
  projection.name =
      fields.String(source, kind == ExecVolume::Kind::kSecret ? "secretName" : "name", path)
          .value_or("");
  // A projected volume's secret source says "name", a secret volume "secretName".
  if (projection.name.empty()) {
    projection.name = fields.String(source, "name", path).value_or("");
  }
  projection.optional = fields.Bool(source, "optional", path).value_or(false);
  if (auto mode = fields.Int32(source, "defaultMode", path)) {
    projection.default_mode = *mode;
  }
  if (const json* items = fields.Array(source, "items", path)) {
    for (size_t i = 0; i < items->size(); ++i) {
      const std::string item_path = IndexPath(JoinPath(path, "items"), i);
      projection.items.push_back({fields.String((*items)[i], "key", item_path).value_or(""),
                                  fields.String((*items)[i], "path", item_path).value_or(""),
                                  fields.Int32((*items)[i], "mode", item_path)});
    }
  }
  return projection;
}

ExecVolume ReadVolume(JsonFields& fields, const json& volume, const std::string& pod_name,
                      const std::string& path) {
  ExecVolume out;
  out.name = fields.String(volume, "name", path).value_or("");
  if (const json* claim = fields.Object(volume, "persistentVolumeClaim", path)) {
    out.kind = ExecVolume::Kind::kClaim;
    out.source = fields.String(*claim, "claimName", path).value_or("");
  } else if (JsonMember(volume, "ephemeral") != nullptr) {
    out.kind = ExecVolume::Kind::kClaim;
    out.source = pod_name + "-" + out.name;
  } else if (JsonMember(volume, "emptyDir") != nullptr) {
    out.kind = ExecVolume::Kind::kEmptyDir;
  } else if (const json* config_map = fields.Object(volume, "configMap", path)) {
    out.kind = ExecVolume::Kind::kConfigMap;
    out.projections.push_back(ReadProjection(fields, *config_map, ExecVolume::Kind::kConfigMap,
                                             JoinPath(path, "configMap")));
  } else if (const json* secret = fields.Object(volume, "secret", path)) {
    out.kind = ExecVolume::Kind::kSecret;
    out.projections.push_back(
        ReadProjection(fields, *secret, ExecVolume::Kind::kSecret, JoinPath(path, "secret")));
  } else if (const json* host_path = fields.Object(volume, "hostPath", path)) {
    out.kind = ExecVolume::Kind::kHostPath;
    out.source = fields.String(*host_path, "path", path).value_or("");
  } else if (const json* projected = fields.Object(volume, "projected", path)) {
    // ConfigMap and Secret sources are shown; service account tokens and the
    // downward API are not.
    out.kind = ExecVolume::Kind::kConfigMap;
    if (const json* sources = fields.Array(*projected, "sources", path)) {
      for (size_t i = 0; i < sources->size(); ++i) {
        const std::string source_path = IndexPath(JoinPath(path, "projected.sources"), i);
        if (const json* cm = fields.Object((*sources)[i], "configMap", source_path)) {
          out.projections.push_back(
              ReadProjection(fields, *cm, ExecVolume::Kind::kConfigMap, source_path));
        } else if (const json* s = fields.Object((*sources)[i], "secret", source_path)) {
          out.projections.push_back(
              ReadProjection(fields, *s, ExecVolume::Kind::kSecret, source_path));
        }
      }
    }
  } else {
    out.kind = ExecVolume::Kind::kUnsupported;
    for (const auto& [key, value] : volume.items()) {
      if (key != "name") {
        out.source = key;
      }
    }
  }
  return out;
}

ExecContainer ReadContainer(JsonFields& fields, const json& container, const std::string& path) {
  ExecContainer out;
  out.name = fields.String(container, "name", path).value_or("");
  out.image = fields.String(container, "image", path).value_or("");
  out.command = fields.StringList(container, "command", path);
  out.args = fields.StringList(container, "args", path);
  out.working_dir = fields.String(container, "workingDir", path).value_or("");
  out.termination_message_policy =
      fields.String(container, "terminationMessagePolicy", path).value_or("File");
  if (const json* env = fields.Array(container, "env", path)) {
    out.env = *env;
  }
  if (const json* env_from = fields.Array(container, "envFrom", path)) {
    out.env_from = *env_from;
  }
  if (const json* mounts = fields.Array(container, "volumeMounts", path)) {
    for (size_t i = 0; i < mounts->size(); ++i) {
      const std::string mount_path = IndexPath(JoinPath(path, "volumeMounts"), i);
      const json& mount = (*mounts)[i];
      out.mounts.push_back({fields.String(mount, "name", mount_path).value_or(""),
                            fields.String(mount, "mountPath", mount_path).value_or(""),
                            fields.String(mount, "subPath", mount_path).value_or(""),
                            fields.Bool(mount, "readOnly", mount_path).value_or(false)});
    }
  }
  return out;
}

std::vector<ExecContainer> ReadContainers(JsonFields& fields, const json& spec, const char* key) {
  std::vector<ExecContainer> out;
  if (const json* containers = fields.Array(spec, key, "spec")) {
    for (size_t i = 0; i < containers->size(); ++i) {
      out.push_back(ReadContainer(fields, (*containers)[i], IndexPath(JoinPath("spec", key), i)));
    }
  }
  return out;
}

// metadata.labels['key'] -> key
std::optional<std::string> SubscriptKey(const std::string& path, const std::string& prefix) {
  if (path.size() < prefix.size() + 4 || path.compare(0, prefix.size(), prefix) != 0 ||
      path.compare(prefix.size(), 2, "['") != 0 || path.compare(path.size() - 2, 2, "']") != 0) {
    return std::nullopt;
  }
  return path.substr(prefix.size() + 2, path.size() - prefix.size() - 4);
}

Result<std::string> FieldValue(const ExecPod& pod, const PodFields& fields,
                               const std::string& path) {
  if (path == "metadata.name")
    return pod.name;
  if (path == "metadata.namespace")
    return pod.namespace_name;
  if (path == "metadata.uid")
    return pod.uid;
  if (path == "spec.nodeName")
    return pod.node_name;
  if (path == "spec.serviceAccountName")
    return pod.service_account;
  if (path == "status.podIP" || path == "status.podIPs")
    return fields.pod_ip;
  if (path == "status.hostIP" || path == "status.hostIPs")
    return fields.host_ip;
  auto lookup = [](const std::map<std::string, std::string>& map, const std::string& key) {
    auto it = map.find(key);
    return it == map.end() ? std::string() : it->second;
  };
  if (auto key = SubscriptKey(path, "metadata.labels"))
    return lookup(pod.labels, *key);
  if (auto key = SubscriptKey(path, "metadata.annotations"))
    return lookup(pod.annotations, *key);
  return InvalidArgument("unsupported fieldPath \"" + path + "\"");
}

// An environment variable name as a container runtime accepts it.
bool IsEnvName(const std::string& name) {
  return !name.empty() && name.find('=') == std::string::npos &&
         !std::isdigit(static_cast<unsigned char>(name.front()));
}

const ObjectData* FindObject(const PodObjects& objects, bool secret, const std::string& name) {
  const auto& map = secret ? objects.secrets : objects.config_maps;
  auto it = map.find(name);
  return it == map.end() ? nullptr : &it->second;
}

std::string KindWord(bool secret) {
  return secret ? "secret" : "configmap";
}

}  // namespace

Result<ExecPod> DecodeExecPod(const json& pod) {
  JsonFields fields;
  ExecPod out;
  const json empty = json::object();
  const json* metadata = fields.Object(pod, "metadata", "");
  const json& meta = metadata != nullptr ? *metadata : empty;
  out.namespace_name = fields.String(meta, "namespace", "metadata").value_or("");
  out.name = fields.String(meta, "name", "metadata").value_or("");
  out.uid = fields.String(meta, "uid", "metadata").value_or("");
  out.labels = fields.StringMap(meta, "labels", "metadata");
  out.annotations = fields.StringMap(meta, "annotations", "metadata");
  const json* spec_member = fields.Object(pod, "spec", "");
  const json& spec = spec_member != nullptr ? *spec_member : empty;
  out.node_name = fields.String(spec, "nodeName", "spec").value_or("");
  out.hostname = fields.String(spec, "hostname", "spec").value_or(out.name);
  out.subdomain = fields.String(spec, "subdomain", "spec").value_or("");
  out.service_account = fields.String(spec, "serviceAccountName", "spec").value_or("default");
  const std::string restart = fields.String(spec, "restartPolicy", "spec").value_or("Always");
  out.restart_policy = restart == "Never"       ? ExecRestartPolicy::kNever
                       : restart == "OnFailure" ? ExecRestartPolicy::kOnFailure
                                                : ExecRestartPolicy::kAlways;
  if (auto deadline = fields.Int64(spec, "activeDeadlineSeconds", "spec")) {
    out.active_deadline = std::chrono::seconds(std::max<int64_t>(0, *deadline));
  }
  if (auto grace = fields.Int64(spec, "terminationGracePeriodSeconds", "spec")) {
    out.termination_grace = std::chrono::seconds(std::max<int64_t>(0, *grace));
  }
  out.init_containers = ReadContainers(fields, spec, "initContainers");
  out.containers = ReadContainers(fields, spec, "containers");
  if (const json* volumes = fields.Array(spec, "volumes", "spec")) {
    for (size_t i = 0; i < volumes->size(); ++i) {
      out.volumes.push_back(
          ReadVolume(fields, (*volumes)[i], out.name, IndexPath("spec.volumes", i)));
    }
  }
  if (!fields.ok()) {
    return fields.ToStatus();
  }
  return out;
}

Result<std::map<std::string, std::string>> ParseExecImagePaths(std::string_view text) {
  std::map<std::string, std::string> out;
  size_t begin = 0;
  while (begin <= text.size() && !text.empty()) {
    size_t end = text.find(',', begin);
    if (end == std::string_view::npos) {
      end = text.size();
    }
    const std::string_view entry = text.substr(begin, end - begin);
    const size_t equals = entry.find('=');
    if (equals == std::string_view::npos || equals == 0 || equals + 1 == entry.size()) {
      return InvalidArgument("\"" + std::string(entry) + "\": want IMAGE=PATH");
    }
    const std::string image(entry.substr(0, equals));
    if (!out.emplace(image, std::string(entry.substr(equals + 1))).second) {
      return InvalidArgument("image \"" + image + "\" is given twice");
    }
    begin = end + 1;
  }
  return out;
}

std::string FallbackTerminationMessage(std::string_view log) {
  constexpr size_t kMaxLines = 80;
  constexpr size_t kMaxBytes = 2048;
  // The last 80 lines: a trailing newline ends the last line, not a new one.
  size_t pos = log.size();
  if (pos > 0 && log[pos - 1] == '\n') {
    --pos;
  }
  size_t start = 0;
  for (size_t lines = 0; lines < kMaxLines; ++lines) {
    const size_t newline = pos == 0 ? std::string_view::npos : log.rfind('\n', pos - 1);
    if (newline == std::string_view::npos) {
      start = 0;
      break;
    }
    start = newline + 1;
    pos = newline;
  }
  std::string_view tail = log.substr(start);
  if (tail.size() > kMaxBytes) {
    tail = tail.substr(tail.size() - kMaxBytes);
  }
  return std::string(tail);
}

ObjectNames ReferencedObjects(const ExecPod& pod) {
  std::set<std::string> config_maps;
  std::set<std::string> secrets;
  for (const ExecVolume& volume : pod.volumes) {
    for (const auto& projection : volume.projections) {
      (projection.kind == ExecVolume::Kind::kSecret ? secrets : config_maps)
          .insert(projection.name);
    }
  }
  auto scan = [&](const ExecContainer& container) {
    for (const json& from : container.env_from) {
      if (const json* ref = JsonMember(from, "configMapRef")) {
        config_maps.insert(ref->value("name", ""));
      } else if (const json* secret_ref = JsonMember(from, "secretRef")) {
        secrets.insert(secret_ref->value("name", ""));
      }
    }
    for (const json& entry : container.env) {
      const json* from = JsonMember(entry, "valueFrom");
      if (from == nullptr) {
        continue;
      }
      if (const json* ref = JsonMember(*from, "configMapKeyRef")) {
        config_maps.insert(ref->value("name", ""));
      } else if (const json* secret_ref = JsonMember(*from, "secretKeyRef")) {
        secrets.insert(secret_ref->value("name", ""));
      }
    }
  };
  for (const auto& container : pod.init_containers)
    scan(container);
  for (const auto& container : pod.containers)
    scan(container);
  config_maps.erase("");
  secrets.erase("");
  return {{config_maps.begin(), config_maps.end()}, {secrets.begin(), secrets.end()}};
}

std::string ExpandReferences(const std::string& text,
                             const std::map<std::string, std::string>& defined) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '$' || i + 1 >= text.size()) {
      out += text[i];
      continue;
    }
    if (text[i + 1] == '$') {
      out += '$';
      ++i;
      continue;
    }
    if (text[i + 1] == '(') {
      const size_t close = text.find(')', i + 2);
      if (close != std::string::npos) {
        const std::string name = text.substr(i + 2, close - i - 2);
        if (auto it = defined.find(name); it != defined.end()) {
          out += it->second;
          i = close;
          continue;
        }
        out += text.substr(i, close - i + 1);  // undefined: kept as written
        i = close;
        continue;
      }
    }
    out += text[i];
  }
  return out;
}

Result<std::vector<std::pair<std::string, std::string>>> ContainerEnvironment(
    const ExecPod& pod, const ExecContainer& container, const PodFields& fields,
    const PodObjects& objects) {
  std::vector<std::pair<std::string, std::string>> env;
  std::map<std::string, std::string> defined;
  auto set = [&](const std::string& name, std::string value) {
    if (auto it = defined.find(name); it != defined.end()) {
      for (auto& entry : env) {
        if (entry.first == name) {
          entry.second = value;
        }
      }
      it->second = std::move(value);
      return;
    }
    defined.emplace(name, value);
    env.emplace_back(name, std::move(value));
  };

  for (const json& from : container.env_from) {
    const json* config_map_ref = JsonMember(from, "configMapRef");
    const json* secret_ref = JsonMember(from, "secretRef");
    const json* ref = config_map_ref != nullptr ? config_map_ref : secret_ref;
    if (ref == nullptr || !ref->is_object()) {
      continue;
    }
    const bool secret = ref == secret_ref;
    const std::string name = ref->value("name", "");
    const ObjectData* data = FindObject(objects, secret, name);
    if (data == nullptr) {
      if (ref->value("optional", false)) {
        continue;
      }
      return NotFound(KindWord(secret) + " \"" + name + "\" not found");
    }
    const std::string prefix = from.is_object() ? from.value("prefix", "") : "";
    for (const auto& [key, value] : *data) {
      if (IsEnvName(prefix + key)) {
        set(prefix + key, value);
      }
    }
  }

  for (const json& entry : container.env) {
    if (!entry.is_object()) {
      continue;
    }
    const std::string name = entry.value("name", "");
    if (!IsEnvName(name)) {
      return InvalidArgument("invalid environment variable name \"" + name + "\"");
    }
    const json* from = JsonMember(entry, "valueFrom");
    if (from == nullptr) {
      const json* value = JsonMember(entry, "value");
      set(name, ExpandReferences(value != nullptr && value->is_string() ? value->get<std::string>()
                                                                        : std::string(),
                                 defined));
      continue;
    }
    if (const json* field = JsonMember(*from, "fieldRef")) {
      Result<std::string> value = FieldValue(pod, fields, field->value("fieldPath", ""));
      if (!value.ok()) {
        return value.status();
      }
      set(name, *value);
      continue;
    }
    const json* config_map_key = JsonMember(*from, "configMapKeyRef");
    const json* secret_key = JsonMember(*from, "secretKeyRef");
    const json* ref = config_map_key != nullptr ? config_map_key : secret_key;
    if (ref == nullptr || !ref->is_object()) {
      return InvalidArgument("env " + name +
                             ": only value, fieldRef, configMapKeyRef and secretKeyRef are "
                             "supported by hybridjob-sim --exec");
    }
    const bool secret = ref == secret_key;
    const std::string object = ref->value("name", "");
    const std::string key = ref->value("key", "");
    const bool optional = ref->value("optional", false);
    const ObjectData* data = FindObject(objects, secret, object);
    if (data == nullptr) {
      if (optional) {
        continue;
      }
      return NotFound(KindWord(secret) + " \"" + object + "\" not found");
    }
    auto value = data->find(key);
    if (value == data->end()) {
      if (optional) {
        continue;
      }
      return NotFound("couldn't find key " + key + " in " + (secret ? "Secret " : "ConfigMap ") +
                      pod.namespace_name + "/" + object);
    }
    set(name, value->second);
  }
  if (!defined.contains("HOSTNAME")) {
    set("HOSTNAME", pod.hostname);
  }
  if (!defined.contains("PATH")) {
    set("PATH", fields.default_path);
  }
  if (!defined.contains("HOME")) {
    set("HOME", "/root");
  }
  return env;
}

Result<std::vector<std::string>> ContainerArgv(const ExecContainer& container,
                                               const std::map<std::string, std::string>& env) {
  std::vector<std::string> argv;
  for (const auto& word : container.command) {
    argv.push_back(ExpandReferences(word, env));
  }
  for (const auto& word : container.args) {
    argv.push_back(ExpandReferences(word, env));
  }
  if (argv.empty()) {
    return InvalidArgument("container " + container.name +
                           " has no command: hybridjob-sim --exec cannot know what image \"" +
                           container.image + "\" would run");
  }
  return argv;
}

Result<std::map<std::string, VolumeFile>> VolumeFiles(const ExecVolume& volume,
                                                      const PodObjects& objects) {
  std::map<std::string, VolumeFile> files;
  for (const auto& projection : volume.projections) {
    const bool secret = projection.kind == ExecVolume::Kind::kSecret;
    const ObjectData* data = FindObject(objects, secret, projection.name);
    if (data == nullptr) {
      if (projection.optional) {
        continue;
      }
      return NotFound(KindWord(secret) + " \"" + projection.name + "\" not found");
    }
    if (projection.items.empty()) {
      for (const auto& [key, value] : *data) {
        files[key] = {value, projection.default_mode};
      }
      continue;
    }
    for (const auto& item : projection.items) {
      auto value = data->find(item.key);
      if (value == data->end()) {
        if (projection.optional) {
          continue;
        }
        return NotFound("configmap references non-existent config key: " + item.key);
      }
      if (item.path.empty() || item.path.front() == '/' || ClimbsOut(item.path)) {
        return InvalidArgument("volume " + volume.name + ": item path \"" + item.path +
                               "\" must be relative and may not contain \"..\"");
      }
      files[item.path] = {value->second, item.mode.value_or(projection.default_mode)};
    }
  }
  return files;
}

Result<std::vector<ExecBind>> ContainerBinds(
    const ExecContainer& container, const std::map<std::string, std::filesystem::path>& volumes) {
  std::vector<ExecBind> binds;
  for (const ExecMount& mount : container.mounts) {
    auto volume = volumes.find(mount.volume);
    if (volume == volumes.end()) {
      return InvalidArgument("container " + container.name + ": volumeMount \"" + mount.volume +
                             "\" names no volume of the pod");
    }
    if (mount.path.empty() || mount.path.front() != '/' || ClimbsOut(mount.path)) {
      return InvalidArgument("container " + container.name + ": mountPath \"" + mount.path +
                             "\" must be absolute and may not contain \"..\"");
    }
    if (!mount.sub_path.empty() && (mount.sub_path.front() == '/' || ClimbsOut(mount.sub_path))) {
      return InvalidArgument("container " + container.name + ": subPath \"" + mount.sub_path +
                             "\" must be relative and may not contain \"..\"");
    }
    std::filesystem::path source = volume->second;
    if (!mount.sub_path.empty()) {
      source /= mount.sub_path;
    }
    binds.push_back({source.lexically_normal(),
                     std::filesystem::path(mount.path).lexically_normal().string(),
                     mount.read_only});
  }
  // Outer paths first, so a mount inside another volume's path lands on top.
  std::stable_sort(binds.begin(), binds.end(), [](const ExecBind& a, const ExecBind& b) {
    return std::count(a.target.begin(), a.target.end(), '/') <
           std::count(b.target.begin(), b.target.end(), '/');
  });
  return binds;
}

std::string HostsFile(const HostsEntry& self, const std::vector<HostsEntry>& others,
                      const std::string& cluster_domain) {
  auto fqdn = [&](const HostsEntry& entry) {
    return entry.hostname + "." + entry.subdomain + "." + entry.namespace_name + ".svc";
  };
  std::string out =
      "# Kubernetes-managed hosts file (hybridjob-sim --exec).\n"
      "127.0.0.1\tlocalhost\n"
      "::1\tlocalhost ip6-localhost ip6-loopback\n";
  if (self.subdomain.empty()) {
    out += self.ip + "\t" + self.hostname + "\n";
  } else {
    out += self.ip + "\t" + fqdn(self) + "." + cluster_domain + " " + fqdn(self) + " " +
           self.hostname + "\n";
  }
  // Headless services: <subdomain>.<ns> -> member addresses.
  std::map<std::pair<std::string, std::string>, std::vector<std::string>> services;
  if (!self.subdomain.empty()) {
    services[{self.namespace_name, self.subdomain}].push_back(self.ip);
  }
  for (const HostsEntry& other : others) {
    if (other.subdomain.empty() || other.ip == self.ip) {
      continue;
    }
    out += other.ip + "\t" + fqdn(other) + "." + cluster_domain + " " + fqdn(other) + "\n";
    services[{other.namespace_name, other.subdomain}].push_back(other.ip);
  }
  for (const auto& [service, ips] : services) {
    const std::string name = service.second + "." + service.first + ".svc";
    for (const std::string& ip : ips) {
      out += ip + "\t" + name + "." + cluster_domain + " " + name + "\n";
    }
  }
  return out;
}

bool RestartsAfterExit(ExecRestartPolicy policy, int exit_code) {
  switch (policy) {
    case ExecRestartPolicy::kAlways:
      return true;
    case ExecRestartPolicy::kOnFailure:
      return exit_code != 0;
    case ExecRestartPolicy::kNever:
      return false;
  }
  return false;
}

std::chrono::seconds RestartBackoff(int restarts) {
  std::chrono::seconds backoff(10);
  for (int i = 1; i < restarts && backoff < std::chrono::seconds(300); ++i) {
    backoff *= 2;
  }
  return std::min(backoff, std::chrono::seconds(300));
}

std::string PodPhaseFromContainers(const std::vector<ExecContainerStatus>& containers,
                                   ExecRestartPolicy policy) {
  int running = 0;
  int waiting = 0;
  int stopped = 0;
  int succeeded = 0;
  for (const ExecContainerStatus& c : containers) {
    switch (c.state) {
      case ExecContainerStatus::State::kRunning:
        ++running;
        break;
      case ExecContainerStatus::State::kTerminated:
        ++stopped;
        succeeded += c.exit_code == 0 ? 1 : 0;
        break;
      case ExecContainerStatus::State::kWaiting:
        // Waiting to run again after an exit counts as that exit.
        if (c.last_terminated) {
          ++stopped;
          succeeded += c.last_terminated->exit_code == 0 ? 1 : 0;
        } else {
          ++waiting;
        }
        break;
    }
  }
  if (waiting > 0) {
    return "Pending";
  }
  if (running > 0) {
    return "Running";
  }
  if (stopped == 0) {
    return "Pending";
  }
  switch (policy) {
    case ExecRestartPolicy::kAlways:
      return "Running";
    case ExecRestartPolicy::kOnFailure:
      return stopped == succeeded ? "Succeeded" : "Running";
    case ExecRestartPolicy::kNever:
      return stopped == succeeded ? "Succeeded" : "Failed";
  }
  return "Pending";
}

namespace {

json StateJson(const ExecContainerStatus& c) {
  switch (c.state) {
    case ExecContainerStatus::State::kWaiting: {
      json waiting = {{"reason", c.reason}};
      if (!c.message.empty()) {
        waiting["message"] = c.message;
      }
      return {{"waiting", std::move(waiting)}};
    }
    case ExecContainerStatus::State::kRunning:
      return {{"running", {{"startedAt", api::FormatTime(c.started_at)}}}};
    case ExecContainerStatus::State::kTerminated: {
      json terminated = {{"exitCode", c.exit_code},
                         {"reason", c.reason},
                         {"startedAt", api::FormatTime(c.started_at)},
                         {"finishedAt", api::FormatTime(c.finished_at)}};
      if (c.signal != 0) {
        terminated["signal"] = c.signal;
      }
      if (!c.message.empty()) {
        terminated["message"] = c.message;
      }
      return {{"terminated", std::move(terminated)}};
    }
  }
  return json::object();
}

json ContainerStatusJson(const ExecPodStatus& pod, const ExecContainerStatus& c) {
  const bool running = c.state == ExecContainerStatus::State::kRunning;
  json status = {
      {"name", c.name},        {"image", c.image},           {"imageID", "sim-exec://" + c.image},
      {"ready", running},      {"started", running},         {"restartCount", c.restart_count},
      {"state", StateJson(c)}, {"lastState", json::object()}};
  if (c.state != ExecContainerStatus::State::kWaiting) {
    status["containerID"] = "sim-exec://" + pod.namespace_name + "/" + pod.name + "/" + c.name +
                            "/" + std::to_string(c.restart_count);
  }
  if (c.last_terminated) {
    status["lastState"] = {{"terminated",
                            {{"exitCode", c.last_terminated->exit_code},
                             {"reason", c.last_terminated->reason},
                             {"startedAt", api::FormatTime(c.last_terminated->started_at)},
                             {"finishedAt", api::FormatTime(c.last_terminated->finished_at)}}}};
    if (!c.last_terminated->message.empty()) {
      status["lastState"]["terminated"]["message"] = c.last_terminated->message;
    }
  }
  return status;
}

json ConditionJson(const char* type, bool status, const std::string& reason,
                   const std::string& message, ExecClock::time_point now) {
  // null removes what an earlier patch wrote: conditions merge by type.
  auto or_null = [](const std::string& text) { return text.empty() ? json(nullptr) : json(text); };
  return {{"type", type},
          {"status", status ? "True" : "False"},
          {"lastTransitionTime", api::FormatTime(now)},
          {"reason", or_null(reason)},
          {"message", or_null(message)}};
}

}  // namespace

json ExecStatusPatch(const ExecPodStatus& status, ExecClock::time_point now) {
  std::vector<std::string> not_initialized;
  for (const auto& c : status.init_containers) {
    if (!(c.state == ExecContainerStatus::State::kTerminated && c.exit_code == 0)) {
      not_initialized.push_back(c.name);
    }
  }
  std::vector<std::string> not_ready;
  for (const auto& c : status.containers) {
    if (c.state != ExecContainerStatus::State::kRunning) {
      not_ready.push_back(c.name);
    }
  }
  const bool finished = status.phase == "Succeeded" || status.phase == "Failed";
  const std::string not_ready_reason = finished ? "PodCompleted" : "ContainersNotReady";
  const std::string not_ready_message =
      finished || not_ready.empty()
          ? ""
          : "containers with unready status: [" + Join(not_ready, " ") + "]";
  const bool ready = not_ready.empty() && !status.containers.empty();
  json conditions =
      json::array({ConditionJson("Initialized", status.initialized,
                                 status.initialized ? (finished ? "PodCompleted" : "")
                                                    : "ContainersNotInitialized",
                                 status.initialized ? ""
                                                    : "containers with incomplete status: [" +
                                                          Join(not_initialized, " ") + "]",
                                 now),
                   ConditionJson("Ready", ready, ready ? "" : not_ready_reason,
                                 ready ? "" : not_ready_message, now),
                   ConditionJson("ContainersReady", ready, ready ? "" : not_ready_reason,
                                 ready ? "" : not_ready_message, now),
                   ConditionJson("PodScheduled", true, "", "", now)});
  json init = json::array();
  for (const auto& c : status.init_containers) {
    init.push_back(ContainerStatusJson(status, c));
  }
  json containers = json::array();
  for (const auto& c : status.containers) {
    containers.push_back(ContainerStatusJson(status, c));
  }
  json out = {{"phase", status.phase},
              {"hostIP", status.host_ip},
              {"startTime", api::FormatTime(status.start_time)},
              {"conditions", std::move(conditions)},
              {"containerStatuses", std::move(containers)}};
  if (!init.empty()) {
    out["initContainerStatuses"] = std::move(init);
  }
  if (!status.pod_ip.empty()) {
    out["podIP"] = status.pod_ip;
    out["podIPs"] = json::array({{{"ip", status.pod_ip}}});
  }
  if (!status.reason.empty()) {
    out["reason"] = status.reason;
  }
  if (!status.message.empty()) {
    out["message"] = status.message;
  }
  return {{"status", std::move(out)}};
}

}  // namespace hybridjob::sim
