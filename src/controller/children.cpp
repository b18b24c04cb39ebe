#include <algorithm>
#include <set>

#include <hybridjob/api/group_spec.h>
#include <hybridjob/api/json.h>
#include <hybridjob/api/labels.h>
#include <hybridjob/api/names.h>
#include <hybridjob/api/spec_edits.h>
#include <hybridjob/controller/children.h>
#include <hybridjob/k8s/object_meta.h>

namespace hybridjob::controller {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

constexpr int32_t kTensorboardPort = 6006;
// The user the controller's own containers run as: not root, and no user an
// image is likely to own files as.
constexpr int64_t kAddedContainerUser = 65532;

// The shell sources the role's env file, then becomes the container's command.
constexpr std::string_view kEnvWrapperScriptText =
    "set -e\n"
    ". \"/etc/hybridjob/${HYBRIDJOB_ROLE}.env\"\n"
    "exec \"$@\"\n";

// What a store answered, from the response body in $1: S3's error <Code> and
// <Message>, else the body's first 300 bytes. Shared by the fetch and upload
// scripts, which print it when a request fails, so that the pod's log and its
// termination message (FallbackToLogsOnError) say it.
#define HYBRIDJOB_ANSWER_FUNCTION                                                         \
  "answer() {\n"                                                                          \
  "  body=\"$(tr -d '\\r\\n' < \"$1\" | head -c 4096)\"\n"                                \
  "  code=\"$(printf '%s' \"$body\" | sed -n 's:.*<Code>\\([^<]*\\)</Code>.*:\\1:p')\"\n" \
  "  if [ -n \"$code\" ]; then\n"                                                         \
  "    printf '%s: %s' \"$code\" \"$(printf '%s' \"$body\" | "                            \
  "sed -n 's:.*<Message>\\([^<]*\\)</Message>.*:\\1:p')\"\n"                              \
  "  else\n"                                                                              \
  "    printf '%s' \"$body\" | head -c 300\n"                                             \
  "  fi\n"                                                                                \
  "}\n"

// With AWS_ACCESS_KEY_ID set, the positional parameters become curl's SigV4
// options (region AWS_REGION, else AWS_DEFAULT_REGION, else us-east-1, in
// $region). S3 refuses a SigV4 request without x-amz-content-sha256, which
// curl before 8.x does not add. Shared by the fetch and upload scripts.
#define HYBRIDJOB_SIGV4_ARGUMENTS                                       \
  "if [ -n \"${AWS_ACCESS_KEY_ID:-}\" ]; then\n"                        \
  "  set -- --aws-sigv4 \"aws:amz:$region:s3\" \\\n"                    \
  "    --user \"$AWS_ACCESS_KEY_ID:${AWS_SECRET_ACCESS_KEY:-}\" \\\n"   \
  "    -H \"x-amz-content-sha256: UNSIGNED-PAYLOAD\"\n"                 \
  "  if [ -n \"${AWS_SESSION_TOKEN:-}\" ]; then\n"                      \
  "    set -- \"$@\" -H \"x-amz-security-token: $AWS_SESSION_TOKEN\"\n" \
  "  fi\n"                                                              \
  "fi\n"

// Fetches $1 into a temporary file, removed however the script ends, and
// unpacks it into $2. The URL only ever appears quoted, as data; it is never
// evaluated. For s3:// sources, AWS_ENDPOINT_URL names an S3-compatible store
// (path-style); the aws CLI copies the object where the image has one, else
// curl signs the request (SigV4) with AWS_ACCESS_KEY_ID. A failed request
// exits non-zero with what the store answered.
constexpr std::string_view kCodeFetchScriptText =
    "set -eu\n"
    "src=\"$1\"\n"
    "dest=\"$2\"\n"
    "archive=\"$(mktemp)\"\n"
    "trap 'rm -f \"$archive\"' EXIT\n"
    "endpoint=\"${AWS_ENDPOINT_URL:-}\"\n"
    "region=\"${AWS_REGION:-${AWS_DEFAULT_REGION:-us-east-1}}\"\n" HYBRIDJOB_ANSWER_FUNCTION
    "url=\"$src\"\n"
    "set --\n"
    "case \"$src\" in\n"
    "  s3://*)\n"
    "    if command -v aws >/dev/null 2>&1; then\n"
    "      [ -z \"$endpoint\" ] || set -- --endpoint-url \"$endpoint\"\n"
    "      if ! out=\"$(aws s3 cp --only-show-errors \"$@\" \"$src\" \"$archive\" 2>&1)\"; then\n"
    "        echo \"hybridjob-code: could not fetch $src: $(printf '%s' \"$out\" | tail -n 3 | "
    "tr '\\n' ' ')\" >&2\n"
    "        exit 1\n"
    "      fi\n"
    "      fetched=1\n"
    "    else\n"
    "      rest=\"${src#s3://}\"\n"
    "      if [ -n \"$endpoint\" ]; then\n"
    "        url=\"${endpoint%/}/${rest%%/*}/${rest#*/}\"\n"
    "      else\n"
    "        url=\"https://${rest%%/*}.s3.amazonaws.com/${rest#*/}\"\n"
    "      fi\n" HYBRIDJOB_SIGV4_ARGUMENTS
    "    fi\n"
    "    ;;\n"
    "esac\n"
    "if [ -z \"${fetched:-}\" ]; then\n"
    "  if command -v curl >/dev/null 2>&1; then\n"
    "    if ! curl -sSL --retry 3 --fail-with-body \"$@\" -o \"$archive\" --url \"$url\"; then\n"
    "      echo \"hybridjob-code: could not fetch $src: the server answered $(answer "
    "\"$archive\")\" >&2\n"
    "      exit 1\n"
    "    fi\n"
    "  else\n"
    "    wget -q -O \"$archive\" \"$url\"\n"
    "  fi\n"
    "fi\n"
    "mkdir -p \"$dest\"\n"
    "case \"${src%%\\?*}\" in\n"
    "  *.zip) unzip -q -o \"$archive\" -d \"$dest\" ;;\n"
    "  *.tar.gz|*.tgz) tar -xzf \"$archive\" -C \"$dest\" ;;\n"
    "  *) tar -xf \"$archive\" -C \"$dest\" ;;\n"
    "esac\n";

// PUTs every file of the given paths (directories recursively) below $1: an
// http(s):// prefix, or s3://bucket[/prefix] (copied by the aws CLI where the
// image has one, else signed by curl with AWS_ACCESS_KEY_ID; AWS_ENDPOINT_URL
// names an S3-compatible store). Names only ever appear quoted, as data. The
// first failed PUT exits non-zero with what the store answered, so the job
// never shows Uploaded with an object missing.
constexpr std::string_view kArtifactsUploadScriptText =
    "set -eu\n"
    "dest=\"${1%/}\"\n"
    "root=\"$2\"\n"
    "shift 2\n"
    "endpoint=\"${AWS_ENDPOINT_URL:-}\"\n"
    "region=\"${AWS_REGION:-${AWS_DEFAULT_REGION:-us-east-1}}\"\n"
    "list=\"$(mktemp)\"\n"
    "response=\"$(mktemp)\"\n"
    "trap 'rm -f \"$list\" \"$response\"' EXIT\n" HYBRIDJOB_ANSWER_FUNCTION
    "put() {\n"
    "  file=\"$1\"\n"
    "  rel=\"$2\"\n"
    "  set --\n"
    "  case \"$dest\" in\n"
    "    s3://*)\n"
    "      if command -v aws >/dev/null 2>&1; then\n"
    "        [ -z \"$endpoint\" ] || set -- --endpoint-url \"$endpoint\"\n"
    "        if ! out=\"$(aws s3 cp --only-show-errors \"$@\" \"$file\" \"$dest/$rel\" 2>&1)\"; "
    "then\n"
    "          echo \"hybridjob-artifacts: could not upload $rel to $dest/$rel: "
    "$(printf '%s' \"$out\" | tail -n 3 | tr '\\n' ' ')\" >&2\n"
    "          exit 1\n"
    "        fi\n"
    "        return\n"
    "      fi\n"
    "      rest=\"${dest#s3://}\"\n"
    "      bucket=\"${rest%%/*}\"\n"
    "      prefix=\"\"\n"
    "      [ \"$rest\" = \"$bucket\" ] || prefix=\"${rest#*/}/\"\n"
    "      if [ -n \"$endpoint\" ]; then\n"
    "        url=\"${endpoint%/}/$bucket/$prefix$rel\"\n"
    "      else\n"
    "        url=\"https://$bucket.s3.amazonaws.com/$prefix$rel\"\n"
    "      fi\n" HYBRIDJOB_SIGV4_ARGUMENTS
    "      ;;\n"
    "    *)\n"
    "      url=\"$dest/$rel\"\n"
    "      ;;\n"
    "  esac\n"
    "  if ! curl -sS --retry 3 --fail-with-body \"$@\" -o \"$response\" -T \"$file\" --url "
    "\"$url\"; then\n"
    "    echo \"hybridjob-artifacts: could not upload $rel to $url: the server answered "
    "$(answer \"$response\")\" >&2\n"
    "    exit 1\n"
    "  fi\n"
    "}\n"
    "count=0\n"
    "for path in \"$@\"; do\n"
    "  if [ -d \"$root/$path\" ]; then\n"
    "    find \"$root/$path\" -type f > \"$list\"\n"
    "    while IFS= read -r file; do\n"
    "      put \"$file\" \"${file#\"$root\"/}\" < /dev/null\n"
    "      count=$((count + 1))\n"
    "    done < \"$list\"\n"
    "  elif [ -f \"$root/$path\" ]; then\n"
    "    put \"$root/$path\" \"$path\"\n"
    "    count=$((count + 1))\n"
    "  else\n"
    "    echo \"hybridjob-artifacts: $path: no such file or directory on the volume\" >&2\n"
    "    exit 1\n"
    "  fi\n"
    "done\n"
    "echo \"hybridjob-artifacts: uploaded $count files to $dest\"\n";

#undef HYBRIDJOB_ANSWER_FUNCTION
#undef HYBRIDJOB_SIGV4_ARGUMENTS

// The launcher starts only once every worker in the hostfile runs sshd with
// the job's key: mpirun gives up on a host that refuses it.
constexpr std::string_view kWaitForWorkersScriptText =
    "set -u\n"
    "hostfile=\"$1\"\n"
    "while read -r host rest; do\n"
    "  [ -n \"$host\" ] || continue\n"
    "  until ssh -n -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null "
    "\\\n"
    "      -o ConnectTimeout=2 -o LogLevel=ERROR \"$host\" true; do\n"
    "    echo \"waiting for $host to accept SSH\"\n"
    "    sleep 1\n"
    "  done\n"
    "  echo \"$host accepts SSH\"\n"
    "done < \"$hostfile\"\n";

json ChildMeta(const api::HybridJob& job, std::string name, bool owned = true) {
  json meta = {{"name", std::move(name)},
               {"namespace", JobNamespace(job)},
               {"labels", {{std::string(api::kJobNameLabel), job.metadata.name}}}};
  if (owned) {
    meta["ownerReferences"] = json::array({OwnerReference(job)});
  }
  return meta;
}

// The metadata of a child that belongs to the job's current run
// (job.status.run): member pods, the cluster ConfigMap, the uploader.
json RunChildMeta(const api::HybridJob& job, std::string name) {
  json meta = ChildMeta(job, std::move(name));
  meta["labels"][std::string(api::kRunLabel)] = std::to_string(job.status.run);
  return meta;
}

json& ArrayMember(json& parent, const char* key) {
  if (!parent.contains(key) || !parent[key].is_array()) {
    parent[key] = json::array();
  }
  return parent[key];
}

bool HasEnv(const json& container, std::string_view name) {
  const json* env = container.contains("env") ? &container["env"] : nullptr;
  return env != nullptr && env->is_array() &&
         std::any_of(env->begin(), env->end(), [&](const json& entry) {
           return entry.is_object() && entry.value("name", "") == name;
         });
}

// Sets env var `name`, replacing whatever the template had under that name.
void SetEnv(json& container, const std::string& name, const std::string& value) {
  json& env = ArrayMember(container, "env");
  env.erase(std::remove_if(env.begin(), env.end(),
                           [&](const json& entry) {
                             return entry.is_object() && entry.value("name", "") == name;
                           }),
            env.end());
  env.push_back({{"name", name}, {"value", value}});
}

void AddMount(json& container, std::string_view volume, std::string_view path, bool read_only) {
  json mount = {{"name", volume}, {"mountPath", path}};
  if (read_only) {
    mount["readOnly"] = true;
  }
  ArrayMember(container, "volumeMounts").push_back(std::move(mount));
}

// The command becomes: /bin/sh -c <wrapper> hybridjob-env <command...> <args...>
void WrapCommand(json& container) {
  if (!container.contains("command") || !container["command"].is_array() ||
      container["command"].empty()) {
    return;
  }
  json command =
      json::array({"/bin/sh", "-c", EscapeKubeExpansion(kEnvWrapperScriptText), "hybridjob-env"});
  for (const json& word : container["command"]) {
    command.push_back(word);
  }
  if (container.contains("args") && container["args"].is_array()) {
    for (const json& word : container["args"]) {
      command.push_back(word);
    }
  }
  container["command"] = std::move(command);
  container.erase("args");
}

// The containers the controller adds to users' workloads meet the Pod
// Security "restricted" level whatever their image's user: they need no
// privilege, and a job must not be refused in a namespace that enforces it.
json RestrictedSecurityContext() {
  return {{"runAsNonRoot", true},
          {"runAsUser", kAddedContainerUser},
          {"runAsGroup", kAddedContainerUser},
          {"allowPrivilegeEscalation", false},
          {"capabilities", {{"drop", {"ALL"}}}},
          {"seccompProfile", {{"type", "RuntimeDefault"}}}};
}

}  // namespace

std::string ClaimName(const api::HybridJob& job, const api::VolumeSpec& volume) {
  return volume.existing_claim ? *volume.existing_claim
                               : api::VolumeClaimName(job.metadata.name, volume.name);
}

json BuildCodeFetcher(const api::HybridJob& job, const json& first_container,
                      const PlannerOptions& options) {
  const api::CodeSpec& code = *job.spec.code;
  json container = {
      {"name", api::kCodeInitContainerName},
      {"image", code.image.value_or(options.code_fetcher_image)},
      {"command",
       {"/bin/sh", "-c", EscapeKubeExpansion(kCodeFetchScriptText), "hybridjob-code",
        EscapeKubeExpansion(code.source), EscapeKubeExpansion(code.mount_path)}},
      {"volumeMounts", {{{"name", api::kCodeVolumeName}, {"mountPath", code.mount_path}}}},
      {"securityContext", RestrictedSecurityContext()},
      // What the store answered becomes the member's termination message.
      {"terminationMessagePolicy", "FallbackToLogsOnError"},
  };
  // Credentials for private archives come from the member's own container.
  if (first_container.contains("envFrom") && first_container["envFrom"].is_array()) {
    container["envFrom"] = first_container["envFrom"];
  }
  if (first_container.contains("env") && first_container["env"].is_array()) {
    json env = json::array();
    for (const json& entry : first_container["env"]) {
      if (entry.is_object() && entry.value("name", "").rfind("AWS_", 0) == 0) {
        env.push_back(entry);
      }
    }
    if (!env.empty()) {
      container["env"] = std::move(env);
    }
  }
  if (code.endpoint) {
    SetEnv(container, "AWS_ENDPOINT_URL", *code.endpoint);
  }
  if (code.credentials_secret) {
    ArrayMember(container, "envFrom")
        .push_back({{"secretRef", {{"name", *code.credentials_secret}}}});
  }
  return container;
}

const std::string_view kEnvWrapperScript = kEnvWrapperScriptText;
const std::string_view kCodeFetchScript = kCodeFetchScriptText;
const std::string_view kWaitForWorkersScript = kWaitForWorkersScriptText;
const std::string_view kArtifactsUploadScript = kArtifactsUploadScriptText;

std::string JobNamespace(const api::HybridJob& job) {
  return job.metadata.namespace_name.empty() ? "default" : job.metadata.namespace_name;
}

json OwnerReference(const api::HybridJob& job) {
  return {{"apiVersion", api::kApiVersion}, {"kind", api::kKind}, {"name", job.metadata.name},
          {"uid", job.metadata.uid},        {"controller", true}, {"blockOwnerDeletion", true}};
}

std::string EscapeKubeExpansion(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    out += c;
    if (c == '$') {
      out += '$';
    }
  }
  return out;
}

json BuildMemberPod(const api::HybridJob& job, const api::ReplicaSpec& role, int32_t index,
                    const PlannerOptions& options) {
  return BuildMemberPod(job, role, index, api::GroupSpecOf(job), options);
}

json BuildMemberPod(const api::HybridJob& job, const api::ReplicaSpec& role, int32_t index,
                    const api::GroupSpec& group_spec, const PlannerOptions& options) {
  const std::string& job_name = job.metadata.name;
  const std::string name = api::MemberPodName(job_name, role.name, index, job.status.run);
  json pod_template = role.pod_template.is_object() ? role.pod_template : json::object();
  json template_meta = pod_template.contains("metadata") && pod_template["metadata"].is_object()
                           ? pod_template["metadata"]
                           : json::object();
  json spec = pod_template.contains("spec") && pod_template["spec"].is_object()
                  ? pod_template["spec"]
                  : json::object();

  json meta = ChildMeta(job, name);
  json labels = template_meta.contains("labels") && template_meta["labels"].is_object()
                    ? template_meta["labels"]
                    : json::object();
  labels[std::string(api::kJobNameLabel)] = job_name;
  labels[std::string(api::kRoleLabel)] = role.name;
  labels[std::string(api::kIndexLabel)] = std::to_string(index);
  labels[std::string(api::kRunLabel)] = std::to_string(job.status.run);
  meta["labels"] = std::move(labels);
  json annotations =
      template_meta.contains("annotations") && template_meta["annotations"].is_object()
          ? template_meta["annotations"]
          : json::object();
  annotations[std::string(api::kGroupSpecAnnotation)] = api::FormatGroupSpec(group_spec);
  meta["annotations"] = std::move(annotations);

  spec["schedulerName"] = job.spec.scheduler_name;
  spec["hostname"] = api::MemberHostname(job_name, role.name, index);
  spec["subdomain"] = api::HeadlessServiceName(job_name);
  spec["restartPolicy"] = "Never";

  json& volumes = ArrayMember(spec, "volumes");
  volumes.push_back({{"name", api::kClusterVolumeName},
                     {"configMap", {{"name", api::ClusterConfigMapName(job_name)}}}});
  if (job.spec.code) {
    volumes.push_back({{"name", api::kCodeVolumeName}, {"emptyDir", json::object()}});
  }
  const bool mpi = job.spec.framework == api::Framework::kMPI;
  if (mpi) {
    // As OpenSSH wants them: the private key readable by its owner only.
    constexpr int kOwnerOnly = 0600;
    volumes.push_back(
        {{"name", api::kSshVolumeName},
         {"secret",
          {{"secretName", api::SshSecretName(job_name)},
           {"defaultMode", kOwnerOnly},
           {"items", json::array({{{"key", kSshPrivateKeyKey}, {"path", "id_rsa"}},
                                  {{"key", kSshPublicKeyKey}, {"path", "id_rsa.pub"}},
                                  {{"key", kSshPublicKeyKey}, {"path", "authorized_keys"}}})}}}});
  }
  std::vector<const api::VolumeSpec*> role_volumes;
  for (const api::VolumeSpec& volume : job.spec.volumes) {
    if (volume.AppliesTo(role.name)) {
      role_volumes.push_back(&volume);
      volumes.push_back({{"name", volume.name},
                         {"persistentVolumeClaim", {{"claimName", ClaimName(job, volume)}}}});
    }
  }

  const bool elastic = job.spec.IsElastic();
  const Membership full = FullMembership(job.spec);
  auto decorate = [&](json& container, bool app_container) {
    if (!container.is_object()) {
      return;
    }
    SetEnv(container, "HYBRIDJOB_JOB_NAME", job_name);
    SetEnv(container, "HYBRIDJOB_ROLE", role.name);
    SetEnv(container, "HYBRIDJOB_INDEX", std::to_string(index));
    if (job.spec.code) {
      SetEnv(container, "HYBRIDJOB_CODE_DIR", job.spec.code->mount_path);
      AddMount(container, api::kCodeVolumeName, job.spec.code->mount_path, false);
    }
    for (const api::VolumeSpec* volume : role_volumes) {
      AddMount(container, volume->name, volume->mount_path, false);
    }
    if (mpi) {
      AddMount(container, api::kSshVolumeName, api::kSshMountPath, true);
    }
    if (!app_container) {
      return;
    }
    if (mpi && role.name == "launcher") {
      // mpirun reaches workers by the names in the hostfile; Open MPI would
      // shorten them to bare hostnames, which no cluster DNS resolves.
      for (const auto& [name, value] :
           {std::pair<std::string, std::string>{"OMPI_MCA_plm_rsh_args", std::string(kMpiSshArgs)},
            {"OMPI_MCA_orte_keep_fqdn_hostnames", "true"}}) {
        if (!HasEnv(container, name)) {
          SetEnv(container, name, value);
        }
      }
    }
    AddMount(container, api::kClusterVolumeName, api::kClusterMountPath, true);
    if (elastic) {
      WrapCommand(container);
    } else {
      for (const EnvTemplate& entry : ClusterEnvironment(job, full, role.name)) {
        SetEnv(container, entry.name, entry.value.Render(index));
      }
    }
  };
  json& containers = ArrayMember(spec, "containers");
  for (json& container : containers) {
    decorate(container, true);
  }
  if (spec.contains("initContainers") && spec["initContainers"].is_array()) {
    for (json& container : spec["initContainers"]) {
      decorate(container, false);
    }
  }
  if (job.spec.code) {
    json& init_containers = ArrayMember(spec, "initContainers");
    json fetch =
        BuildCodeFetcher(job, containers.empty() ? json::object() : containers[0], options);
    init_containers.insert(init_containers.begin(), std::move(fetch));
  }
  if (mpi && role.name == "launcher") {
    // Last: the launcher's own init containers may prepare what ssh needs.
    json wait = {{"name", api::kWaitForWorkersContainerName},
                 {"image", containers.empty() ? std::string() : containers[0].value("image", "")},
                 {"command",
                  {"/bin/sh", "-c", EscapeKubeExpansion(kWaitForWorkersScriptText),
                   "hybridjob-wait-for-workers",
                   std::string(api::kClusterMountPath) + "/" + std::string(kHostfileKey)}}};
    AddMount(wait, api::kClusterVolumeName, api::kClusterMountPath, true);
    AddMount(wait, api::kSshVolumeName, api::kSshMountPath, true);
    ArrayMember(spec, "initContainers").push_back(std::move(wait));
  }

  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", std::move(meta)},
          {"spec", std::move(spec)}};
}

json BuildArtifactsPod(const api::HybridJob& job, const std::string& node,
                       const PlannerOptions& options) {
  const api::ArtifactsSpec& artifacts = *job.spec.artifacts;
  const api::VolumeSpec* volume = job.spec.FindVolume(artifacts.volume);
  json command = {"/bin/sh",
                  "-c",
                  EscapeKubeExpansion(kArtifactsUploadScriptText),
                  "hybridjob-artifacts",
                  EscapeKubeExpansion(artifacts.destination),
                  std::string(api::kArtifactsMountPath)};
  for (const std::string& path : artifacts.paths) {
    command.push_back(EscapeKubeExpansion(path));
  }
  json container = {{"name", "upload"},
                    {"image", artifacts.image.value_or(options.code_fetcher_image)},
                    {"command", std::move(command)},
                    {"securityContext", RestrictedSecurityContext()},
                    // What the store answered reaches the ArtifactsUploaded condition.
                    {"terminationMessagePolicy", "FallbackToLogsOnError"}};
  AddMount(container, "artifacts", api::kArtifactsMountPath, true);
  if (artifacts.endpoint) {
    SetEnv(container, "AWS_ENDPOINT_URL", *artifacts.endpoint);
  }
  if (artifacts.credentials_secret) {
    ArrayMember(container, "envFrom")
        .push_back({{"secretRef", {{"name", *artifacts.credentials_secret}}}});
  }
  json meta = RunChildMeta(job, api::ArtifactsPodName(job.metadata.name));
  json spec = {{"restartPolicy", "OnFailure"},
               {"activeDeadlineSeconds", artifacts.deadline_seconds},
               {"containers", json::array({std::move(container)})},
               {"volumes", json::array({{{"name", "artifacts"},
                                         {"persistentVolumeClaim",
                                          {{"claimName", volume != nullptr ? ClaimName(job, *volume)
                                                                           : artifacts.volume},
                                           {"readOnly", true}}}}})}};
  if (!node.empty()) {
    spec["nodeName"] = node;
  }
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", std::move(meta)},
          {"spec", std::move(spec)}};
}

json BuildRunRevision(const api::HybridJob& job, const api::HybridJobSpec& spec) {
  json meta = ChildMeta(job, api::RunRevisionName(job.metadata.name, spec));
  meta["labels"][std::string(api::kRunLabel)] = std::to_string(job.status.run);
  return {{"apiVersion", "apps/v1"},
          {"kind", "ControllerRevision"},
          {"metadata", std::move(meta)},
          {"data", {{"spec", api::ToJson(spec)}}},
          {"revision", std::max<int64_t>(job.status.run, 0) + 1}};
}

Result<api::HybridJobSpec> StartedSpecOf(const json& revision, const api::HybridJob& job) {
  const std::string name = k8s::NameOf(revision);
  if (k8s::ControllerUidOf(revision) != job.metadata.uid) {
    return InvalidArgument("ControllerRevision " + name + " is not this job's");
  }
  auto data = revision.find("data");
  if (data == revision.end() || !data->is_object() || !data->contains("spec")) {
    return InvalidArgument("ControllerRevision " + name + ": no data.spec");
  }
  Result<api::HybridJob> parsed =
      api::ParseHybridJob(json{{"apiVersion", api::kApiVersion},
                               {"kind", api::kKind},
                               {"metadata", {{"name", job.metadata.name}}},
                               {"spec", (*data)["spec"]}});
  if (!parsed.ok()) {
    return InvalidArgument("ControllerRevision " + name + ": " + parsed.status().message());
  }
  if (!job.status.run_spec || api::RunFixedHash(parsed->spec) != job.status.run_spec->hash) {
    return InvalidArgument("ControllerRevision " + name + " holds another spec than the run's");
  }
  return std::move(parsed->spec);
}

json BuildSshKeySecret(const api::HybridJob& job) {
  return {{"apiVersion", "v1"},
          {"kind", "Secret"},
          {"metadata", ChildMeta(job, api::SshSecretName(job.metadata.name))},
          {"type", "kubernetes.io/ssh-auth"}};
}

json BuildHeadlessService(const api::HybridJob& job) {
  json ports = json::array();
  std::set<int32_t> seen;
  for (const api::ReplicaSpec& role : job.spec.replica_specs) {
    int32_t port = role.EffectivePort(job.spec.framework);
    // A Service may list a port once; roles sharing one share the entry.
    if (!seen.insert(port).second) {
      continue;
    }
    ports.push_back(
        {{"name", role.name}, {"port", port}, {"targetPort", port}, {"protocol", "TCP"}});
  }
  return {{"apiVersion", "v1"},
          {"kind", "Service"},
          {"metadata", ChildMeta(job, api::HeadlessServiceName(job.metadata.name))},
          {"spec",
           {{"clusterIP", "None"},
            {"publishNotReadyAddresses", true},
            {"selector", {{std::string(api::kJobNameLabel), job.metadata.name}}},
            {"ports", std::move(ports)}}}};
}

json BuildClusterConfigMap(const api::HybridJob& job, const Membership& membership,
                           const PlannerOptions& options) {
  json meta = RunChildMeta(job, api::ClusterConfigMapName(job.metadata.name));
  meta["annotations"] = {{std::string(api::kMembersAnnotation), FormatMembership(membership)}};
  json data = json::object();
  data[std::string(kClusterJsonKey)] = ClusterJson(job, membership).dump();
  if (job.spec.framework == api::Framework::kMPI) {
    data[std::string(kHostfileKey)] = MpiHostfile(job, membership, options.gpu_resources);
  }
  for (const api::ReplicaSpec& role : job.spec.replica_specs) {
    data[role.name + std::string(kEnvFileSuffix)] = RoleEnvFile(job, membership, role.name);
  }
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata", std::move(meta)},
          {"data", std::move(data)}};
}

json BuildVolumeClaim(const api::HybridJob& job, const api::VolumeSpec& volume) {
  json access_modes = volume.access_modes.empty() ? json::array({api::kDefaultAccessMode})
                                                  : json(volume.access_modes);
  json spec = {{"accessModes", std::move(access_modes)},
               {"resources", {{"requests", {{"storage", volume.size.value_or("")}}}}}};
  if (volume.storage_class_name) {
    spec["storageClassName"] = *volume.storage_class_name;
  }
  return {{"apiVersion", "v1"},
          {"kind", "PersistentVolumeClaim"},
          {"metadata", ChildMeta(job, api::VolumeClaimName(job.metadata.name, volume.name),
                                 /*owned=*/!volume.retain)},
          {"spec", std::move(spec)}};
}

bool HoldsTensorboardLogs(const api::HybridJob& job, const api::VolumeSpec& volume) {
  if (!job.spec.tensorboard) {
    return false;
  }
  std::string mount = volume.mount_path;
  while (mount.size() > 1 && mount.back() == '/') {
    mount.pop_back();
  }
  const std::string& log_dir = job.spec.tensorboard->log_dir;
  return log_dir == mount || log_dir.rfind(mount + "/", 0) == 0;
}

json BuildTensorboardDeployment(const api::HybridJob& job, const PlannerOptions& options) {
  const api::TensorboardSpec& tensorboard = *job.spec.tensorboard;
  const std::string name = api::TensorboardName(job.metadata.name);
  json meta = ChildMeta(job, name);
  meta["labels"][std::string(api::kTensorboardLabel)] = job.metadata.name;
  json selector = {{std::string(api::kTensorboardLabel), job.metadata.name}};

  json container = {
      {"name", "tensorboard"},
      {"image", tensorboard.image.value_or(options.tensorboard_image)},
      {"command", {"tensorboard"}},
      {"args",
       {"--logdir", EscapeKubeExpansion(tensorboard.log_dir), "--bind_all", "--port",
        std::to_string(kTensorboardPort)}},
      {"ports", {{{"name", "http"}, {"containerPort", kTensorboardPort}}}},
      {"securityContext", RestrictedSecurityContext()},
  };
  json volumes = json::array();
  // Mount the job's volumes that hold the log directory, read-only.
  for (const api::VolumeSpec& volume : job.spec.volumes) {
    if (!HoldsTensorboardLogs(job, volume)) {
      continue;
    }
    volumes.push_back(
        {{"name", volume.name},
         {"persistentVolumeClaim", {{"claimName", ClaimName(job, volume)}, {"readOnly", true}}}});
    AddMount(container, volume.name, volume.mount_path, true);
  }
  // TensorBoard only reads files: it needs no API credentials.
  json pod_spec = {{"containers", json::array({std::move(container)})},
                   {"automountServiceAccountToken", false}};
  if (!volumes.empty()) {
    pod_spec["volumes"] = std::move(volumes);
  }
  return {{"apiVersion", "apps/v1"},
          {"kind", "Deployment"},
          {"metadata", std::move(meta)},
          {"spec",
           {{"replicas", 1},
            {"selector", {{"matchLabels", selector}}},
            {"template", {{"metadata", {{"labels", selector}}}, {"spec", std::move(pod_spec)}}}}}};
}

json BuildTensorboardService(const api::HybridJob& job) {
  const std::string name = api::TensorboardName(job.metadata.name);
  json meta = ChildMeta(job, name);
  meta["labels"][std::string(api::kTensorboardLabel)] = job.metadata.name;
  return {{"apiVersion", "v1"},
          {"kind", "Service"},
          {"metadata", std::move(meta)},
          {"spec",
           {{"type", job.spec.tensorboard->service_type},
            {"selector", {{std::string(api::kTensorboardLabel), job.metadata.name}}},
            {"ports",
             {{{"name", "http"},
               {"port", kTensorboardPort},
               {"targetPort", kTensorboardPort},
               {"protocol", "TCP"}}}}}}};
}

}  // namespace hybridjob::controller
