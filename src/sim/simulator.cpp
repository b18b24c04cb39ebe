#include <algorithm>
#include <functional>

#include <spdlog/spdlog.h>

#include <hybridjob/api/time.h>
#include <hybridjob/common/json_fields.h>
#include <hybridjob/common/mutex.h>
#include <hybridjob/k8s/api_status.h>
#include <hybridjob/k8s/base64.h>
#include <hybridjob/k8s/object_meta.h>
#include <hybridjob/scheduler/objects/objects.h>
#include <hybridjob/sim/simulator.h>
#include <hybridjob/sim/synthetic_log.h>

namespace hybridjob::sim {
namespace {

constexpr const char* kNodeLeaseNamespace = "kube-node-lease";
// Lease renewers: one per 200 nodes, at most this many. A busy API server
// answers a renewal in 100-200 ms, so 5,000 nodes every 40 s need about 25.
constexpr int64_t kNodesPerHeartbeatThread = 200;
constexpr int64_t kMaxHeartbeatThreads = 32;

std::string MicroTimeNow() {
  const auto now = std::chrono::system_clock::now();
  return api::FormatTime(std::chrono::time_point_cast<std::chrono::seconds>(now))
      .insert(19, ".000000");
}

// Runs fn(i) for i in [0, count) on `threads` threads; returns the first error.
Status ParallelFor(int64_t count, int threads, const std::function<Status(int64_t)>& fn) {
  std::atomic<int64_t> next{0};
  Mutex mu;
  Status first_error;  // guarded by mu
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      for (int64_t i = next++; i < count; i = next++) {
        Status s = fn(i);
        if (!s.ok()) {
          MutexLock lock(mu);
          if (first_error.ok()) {
            first_error = s;
          }
        }
      }
    });
  }
  for (auto& t : pool) {
    t.join();
  }
  return first_error;
}

// A ConfigMap's data and binaryData, or a Secret's data, decoded.
ObjectData ObjectDataOf(const nlohmann::json& object, bool secret) {
  ObjectData out;
  auto read = [&](const char* field, bool base64) {
    const nlohmann::json* data = JsonMember(object, field);
    if (data == nullptr || !data->is_object()) {
      return;
    }
    for (const auto& [key, value] : data->items()) {
      if (!value.is_string()) {
        continue;
      }
      if (!base64) {
        out[key] = value.get<std::string>();
      } else if (auto decoded = k8s::Base64Decode(value.get<std::string>())) {
        out[key] = *decoded;
      }
    }
  };
  read("data", secret);
  if (!secret) {
    read("binaryData", true);
  }
  return out;
}

Result<SimNode> DecodeSimNode(const nlohmann::json& node) {
  SimNode out;
  if (!node.contains("metadata") || !node["metadata"].is_object()) {
    return InvalidArgument("node without metadata");
  }
  out.name = k8s::NameOf(node);
  if (node.contains("status") && node["status"].is_object() &&
      node["status"].contains("conditions") && node["status"]["conditions"].is_array()) {
    for (const auto& condition : node["status"]["conditions"]) {
      if (condition.is_object() && condition.value("type", "") == "Ready") {
        out.reported_not_ready = condition.value("status", "") != "True";
      }
    }
  }
  return out;
}

}  // namespace

Simulator::Simulator(k8s::ApiClient& client, SimulatorOptions options)
    : client_(client), options_(std::move(options)) {
  if (options_.nodes.count > 0) {
    if (auto node = scheduler::ParseNode(MakeNode(options_.nodes, 0)); node.ok()) {
      node_allocatable_ = node->allocatable;
    }
  }
  for (int64_t i = 0; i < options_.nodes.count; ++i) {
    node_index_[NodeName(options_.nodes, i)] = i;
  }
}

Simulator::~Simulator() {
  Stop();
}

std::vector<std::string> Simulator::NodeNames() const {
  std::vector<std::string> names;
  for (int64_t i = 0; i < options_.nodes.count; ++i) {
    names.push_back(NodeName(options_.nodes, i));
  }
  return names;
}

Status Simulator::RegisterNode(int64_t index) {
  const nlohmann::json node = MakeNode(options_.nodes, index);
  const std::string name = NodeName(options_.nodes, index);
  auto created = client_.Create(k8s::resources::Nodes(), "", node);
  if (!created && !k8s::IsAlreadyExists(created.status())) {
    return Status(created.status().code(),
                  "register node " + name + ": " + created.status().message());
  }
  // Admission taints new nodes not-ready; a Ready kubelet clears that. The
  // status is written explicitly too, for a node that already existed.
  nlohmann::json taints_patch = {{"spec", {{"taints", NodeTaints(options_.nodes)}}}};
  if (options_.nodes.taints.empty()) {
    taints_patch["spec"]["taints"] = nullptr;
  }
  if (auto patched = client_.Patch(k8s::resources::Nodes(), "", name, k8s::PatchType::kMerge,
                                   taints_patch.dump());
      !patched) {
    return Status(patched.status().code(),
                  "taint node " + name + ": " + patched.status().message());
  }
  k8s::PatchOptions status_patch;
  status_patch.subresource = "status";
  const nlohmann::json status = {{"status", node["status"]}};
  if (auto patched = client_.Patch(k8s::resources::Nodes(), "", name, k8s::PatchType::kMerge,
                                   status.dump(), status_patch);
      !patched) {
    return Status(patched.status().code(),
                  "node status " + name + ": " + patched.status().message());
  }
  const nlohmann::json lease = {
      {"apiVersion", "coordination.k8s.io/v1"},
      {"kind", "Lease"},
      {"metadata", {{"name", name}, {"namespace", kNodeLeaseNamespace}}},
      {"spec",
       {{"holderIdentity", name},
        {"leaseDurationSeconds",
         std::max<int64_t>(
             1,
             std::chrono::duration_cast<std::chrono::seconds>(options_.heartbeat_interval).count() +
                 1)},
        {"renewTime", MicroTimeNow()}}}};
  auto lease_created = client_.Create(k8s::resources::Leases(), kNodeLeaseNamespace, lease);
  if (!lease_created && !k8s::IsAlreadyExists(lease_created.status())) {
    return Status(lease_created.status().code(),
                  "node lease " + name + ": " + lease_created.status().message());
  }
  ++stats_.nodes_registered;
  return Status::Ok();
}

Status Simulator::RegisterNodes() {
  return ParallelFor(options_.nodes.count, std::max(1, options_.workers),
                     [this](int64_t i) { return RegisterNode(i); });
}

void Simulator::DeleteNodes() {
  (void)ParallelFor(options_.nodes.count, std::max(1, options_.workers), [this](int64_t i) {
    const std::string name = NodeName(options_.nodes, i);
    Status s = client_.Delete(k8s::resources::Nodes(), "", name);
    (void)client_.Delete(k8s::resources::Leases(), kNodeLeaseNamespace, name);
    return s.ok() || k8s::IsNotFound(s) ? Status::Ok() : s;
  });
}

Status Simulator::Start() {
  if (Status s = ValidateNodePool(options_.nodes); !s.ok()) {
    return s;
  }
  {
    MutexLock lock(mu_);
    if (started_) {
      return Status::Ok();
    }
    started_ = true;
  }
  // Retries back off per pod; the overall bucket is the client's QPS, not the queue's.
  queue_ = std::make_unique<k8s::WorkQueue>(std::make_unique<k8s::WorkqueueRateLimiter>(
      std::chrono::milliseconds(50), std::chrono::seconds(30), 100000, 100000));
  if (options_.exec_dir) {
    ExecRuntimeOptions exec_options;
    exec_options.state_dir = *options_.exec_dir;
    exec_options.image_paths = options_.exec_image_paths;
    exec_options.on_change = [this](const std::string& key) { queue_->Add(key); };
    Result<std::unique_ptr<ExecRuntime>> runtime = ExecRuntime::Create(std::move(exec_options));
    if (!runtime.ok()) {
      return runtime.status();
    }
    exec_ = std::move(runtime).value();
  }
  const bool exec = exec_ != nullptr;
  // Before the kubelet endpoint, whose log requests read its store.
  k8s::InformerOptions<SimPod> informer_options;
  informer_options.reflector.resource = k8s::resources::Pods();
  informer_options.reflector.field_selector = "spec.nodeName!=";
  informer_options.decode = [exec](nlohmann::json&& pod) { return DecodeSimPod(pod, exec); };
  pods_ = std::make_unique<k8s::Informer<SimPod>>(client_, informer_options);
  // The nodes' kubelet endpoint, for `kubectl logs` (and to refuse `kubectl exec` clearly).
  KubeletServerOptions kubelet_options;
  kubelet_options.mode = exec ? KubeletMode::kExec : KubeletMode::kSimulated;
  kubelet_server_ = std::make_unique<KubeletServer>(
      kubelet_options,
      [this](const ContainerLogRequest& request) { return ContainerLog(request); });
  if (Status s = kubelet_server_->Start(); !s.ok()) {
    return s;
  }
  options_.nodes.kubelet_port = kubelet_server_->port();
  options_.nodes.kubelet_address = kubelet_server_->address();
  if (Status s = RegisterNodes(); !s.ok()) {
    return s;
  }
  spdlog::info("registered {} simulated nodes ({} x {} GPUs)", options_.nodes.count,
               options_.nodes.count, options_.nodes.gpus_per_node);

  events_ = std::make_unique<k8s::EventRecorder>(client_, "kubelet");
  // Only whether each exists (and a claim is Bound, to which volume) is kept;
  // in exec mode also what a ConfigMap or Secret holds.
  enum class Mountable { kClaim, kConfigMap, kSecret };
  auto watch_mountable = [this, exec](k8s::Resource resource, Mountable kind) {
    k8s::InformerOptions<MountObject> options;
    options.reflector.resource = std::move(resource);
    options.decode = [kind, exec](nlohmann::json&& object) -> Result<MountObject> {
      MountObject out;
      out.namespace_name = k8s::NamespaceOf(object);
      out.name = k8s::NameOf(object);
      if (kind == Mountable::kClaim) {
        const nlohmann::json* status = JsonMember(object, "status");
        out.bound =
            status != nullptr && status->is_object() && status->value("phase", "") == "Bound";
        if (const nlohmann::json* spec = JsonMember(object, "spec");
            spec != nullptr && spec->is_object()) {
          out.volume_name = spec->value("volumeName", "");
        }
        return out;
      }
      out.bound = true;
      if (exec) {
        out.data =
            std::make_shared<const ObjectData>(ObjectDataOf(object, kind == Mountable::kSecret));
      }
      return out;
    };
    auto informer = std::make_unique<k8s::Informer<MountObject>>(client_, options);
    if (exec && kind != Mountable::kClaim) {
      // A kubelet keeps ConfigMap and Secret volumes up to date.
      const bool secret = kind == Mountable::kSecret;
      k8s::EventHandler<MountObject> handler;
      handler.on_add = [this, secret](const std::shared_ptr<const MountObject>& object) {
        exec_->UpdateObject(object->namespace_name, secret, object->name, object->data);
      };
      handler.on_update = [this, secret](const auto&, const auto& object) {
        exec_->UpdateObject(object->namespace_name, secret, object->name, object->data);
      };
      handler.on_delete = [this, secret](const std::shared_ptr<const MountObject>& object, bool) {
        exec_->UpdateObject(object->namespace_name, secret, object->name, nullptr);
      };
      informer->AddEventHandler(std::move(handler));
    }
    informer->Start();
    return informer;
  };
  claims_ = watch_mountable(k8s::resources::PersistentVolumeClaims(), Mountable::kClaim);
  config_maps_ = watch_mountable(k8s::resources::ConfigMaps(), Mountable::kConfigMap);
  secrets_ = watch_mountable(k8s::resources::Secrets(), Mountable::kSecret);
  k8s::EventHandler<SimPod> handler;
  auto enqueue = [this](const std::shared_ptr<const SimPod>& pod) {
    if (node_index_.contains(pod->node_name)) {
      TrackAdmitted(*pod, /*gone=*/false);
      queue_->Add(pod->namespace_name + "/" + pod->name);
    }
  };
  handler.on_add = enqueue;
  handler.on_update = [enqueue](const auto&, const auto& pod) { enqueue(pod); };
  handler.on_delete = [this](const std::shared_ptr<const SimPod>& pod, bool) {
    TrackAdmitted(*pod, /*gone=*/true);
    if (exec_) {
      exec_->Remove(pod->uid);
    }
    MutexLock lock(mu_);
    written_phase_.erase(pod->uid);
    written_version_.erase(pod->uid);
  };
  pods_->AddEventHandler(std::move(handler));

  // Nodes are watched only to learn that one of ours was lost.
  k8s::InformerOptions<SimNode> node_options;
  node_options.reflector.resource = k8s::resources::Nodes();
  node_options.decode = [](nlohmann::json&& node) { return DecodeSimNode(node); };
  nodes_ = std::make_unique<k8s::Informer<SimNode>>(client_, node_options);
  k8s::EventHandler<SimNode> node_handler;
  auto on_node = [this](const std::shared_ptr<const SimNode>& node) {
    if (node->reported_not_ready && node_index_.contains(node->name)) {
      MarkLost(node->name, "reported not Ready");
    }
  };
  node_handler.on_add = on_node;
  node_handler.on_update = [on_node](const auto&, const auto& node) { on_node(node); };
  node_handler.on_delete = [this](const std::shared_ptr<const SimNode>& node, bool) {
    if (node_index_.contains(node->name)) {
      MarkLost(node->name, "deleted");
    }
  };
  nodes_->AddEventHandler(std::move(node_handler));
  nodes_->Start();
  pods_->Start();
  for (int i = 0; i < std::max(1, options_.workers); ++i) {
    workers_.emplace_back([this] { Work(); });
  }
  // A few renewers, so one slow request does not hold up every other node's.
  const int64_t shards =
      std::clamp<int64_t>(options_.nodes.count / kNodesPerHeartbeatThread, 1, kMaxHeartbeatThreads);
  for (int64_t shard = 0; shard < shards; ++shard) {
    heartbeat_threads_.emplace_back([this, shard, shards] { HeartbeatLoop(shard, shards); });
  }
  return Status::Ok();
}

void Simulator::Stop() {
  {
    MutexLock lock(mu_);
    if (!started_ || stopping_) {
      return;
    }
    stopping_ = true;
    stop_cv_.notify_all();
  }
  if (pods_) {
    pods_->Stop();
  }
  if (nodes_) {
    nodes_->Stop();
  }
  for (auto* informer : {claims_.get(), config_maps_.get(), secrets_.get()}) {
    if (informer != nullptr) {
      informer->Stop();
    }
  }
  if (queue_) {
    queue_->ShutDown();
  }
  for (auto& worker : workers_) {
    worker.join();
  }
  workers_.clear();
  if (events_) {
    events_->Flush(std::chrono::seconds(2));
    events_->Stop();
  }
  for (auto& heartbeat : heartbeat_threads_) {
    heartbeat.join();
  }
  heartbeat_threads_.clear();
  if (kubelet_server_) {
    kubelet_server_->Stop();  // ends `kubectl logs -f` streams
  }
  if (exec_) {
    exec_->Shutdown();  // every container stops
  }
  if (!options_.keep_nodes) {
    DeleteNodes();
    spdlog::info("removed {} simulated nodes", options_.nodes.count);
  }
}

void Simulator::Work() {
  while (auto key = queue_->Get()) {
    Handle(*key);
    queue_->Done(*key);
  }
}

std::string Simulator::PodIp(const SimPod& pod) const {
  const size_t h = std::hash<std::string>{}(pod.uid);
  return "10.244." + std::to_string((h >> 8) % 256) + "." + std::to_string(h % 254 + 1);
}

Result<ContainerLogSource> Simulator::ContainerLog(const ContainerLogRequest& request) const {
  if (exec_) {
    Result<ExecLogFile> log =
        exec_->LogFile(request.namespace_name, request.pod, request.container, request.previous);
    if (!log.ok()) {
      return log.status();
    }
    return ContainerLogSource{log->file, [this, file = *log] { return exec_->Writing(file); }};
  }
  // The store is safe to read from any thread; its pods are immutable.
  auto pod = pods_->store().Get(request.namespace_name + "/" + request.pod);
  if (pod == nullptr || !node_index_.contains(pod->node_name)) {
    return NotFound("pod \"" + request.pod + "\" does not exist");
  }
  Result<std::string> text = SyntheticContainerLog(*pod, request.container, request.previous);
  if (!text.ok()) {
    return text.status();
  }
  ContainerLogSource source;
  source.text = std::move(text).value();
  return source;
}

void Simulator::Handle(const std::string& key) {
  auto pod = pods_->store().Get(key);
  if (pod == nullptr) {
    queue_->Forget(key);
    return;
  }
  auto node = node_index_.find(pod->node_name);
  if (node == node_index_.end() || IsLost(pod->node_name)) {
    queue_->Forget(key);  // a lost node's kubelet does nothing more
    return;
  }
  const std::string host_ip = NodeAddress(options_.nodes, node->second);
  if (exec_) {
    HandleExec(pod, key, host_ip);
    return;
  }
  const auto now = WallClock::now();
  KubeletDecision decision = DecideKubeletStep(*pod, now, PodIp(*pod), host_ip);
  std::string written_phase;
  if (decision.step == KubeletStep::kStart || decision.step == KubeletStep::kFinish) {
    written_phase = decision.status_patch["status"]["phase"].get<std::string>();
    MutexLock lock(mu_);
    auto it = written_phase_.find(pod->uid);
    // Already reported; the cache has not caught up yet.
    if (it != written_phase_.end() &&
        (it->second == written_phase || it->second == "Succeeded" || it->second == "Failed")) {
      return;
    }
  }
  if (decision.step == KubeletStep::kStart && options_.kubelet_admission) {
    if (std::optional<AdmissionRefusal> refusal = Admit(*pod)) {
      decision.status_patch = RefusalStatusPatch(*refusal);
      decision.wake_at.reset();
      written_phase = "Failed";
      spdlog::info("pod {} refused on {}: {}", key, pod->node_name, refusal->message);
      ++stats_.pods_refused;
    }
  }
  // Admitted, the pod waits for its volumes before any container starts.
  if (decision.step == KubeletStep::kStart && written_phase != "Failed" &&
      WaitForMounts(*pod, key, host_ip, now)) {
    return;
  }
  switch (decision.step) {
    case KubeletStep::kNothing:
      break;
    case KubeletStep::kStart:
    case KubeletStep::kFinish:
      if (!PatchStatus(*pod, decision.status_patch, key)) {
        return;
      }
      {
        MutexLock lock(mu_);
        written_phase_[pod->uid] = written_phase;
      }
      ++(decision.step == KubeletStep::kStart ? stats_.pods_started : stats_.pods_finished);
      break;
    case KubeletStep::kRemove:
      RemovePod(*pod, key);
      return;
  }
  queue_->Forget(key);
  if (decision.wake_at && decision.step != KubeletStep::kFinish) {
    queue_->AddAfter(key, std::chrono::duration_cast<k8s::Duration>(*decision.wake_at - now));
  }
}

bool Simulator::PatchStatus(const SimPod& pod, const nlohmann::json& patch,
                            const std::string& key) {
  k8s::PatchOptions options;
  options.subresource = "status";
  auto patched = client_.Patch(k8s::resources::Pods(), pod.namespace_name, pod.name,
                               k8s::PatchType::kStrategicMerge, patch.dump(), options);
  if (patched || k8s::IsNotFound(patched.status())) {
    return patched.ok();
  }
  ++stats_.write_errors;
  spdlog::warn("pod {}: {}", key, patched.status().ToString());
  queue_->AddRateLimited(key);
  return false;
}

void Simulator::RemovePod(const SimPod& pod, const std::string& key) {
  k8s::DeleteOptions options;
  options.grace_period_seconds = 0;
  options.precondition_uid = pod.uid;
  Status result = client_.Delete(k8s::resources::Pods(), pod.namespace_name, pod.name, options);
  if (result.ok()) {
    ++stats_.pods_removed;
  } else if (!k8s::IsNotFound(result) && !k8s::IsConflict(result)) {
    ++stats_.write_errors;
    spdlog::warn("pod {}: {}", key, result.ToString());
    queue_->AddRateLimited(key);
    return;
  }
  queue_->Forget(key);
}

bool Simulator::WaitForMounts(const SimPod& pod, const std::string& key, const std::string& host_ip,
                              WallClock::time_point now) {
  if (pod.mounts.empty()) {
    return false;
  }
  auto blocked = BlockedMount(pod);
  if (!blocked) {
    return false;
  }
  bool first = false;
  {
    MutexLock lock(mu_);
    std::string& written = written_phase_[pod.uid];
    first = written != "ContainerCreating";
    written = "ContainerCreating";
  }
  if (first) {
    ++stats_.mounts_waited;
    k8s::PatchOptions options;
    options.subresource = "status";
    (void)client_.Patch(k8s::resources::Pods(), pod.namespace_name, pod.name,
                        k8s::PatchType::kStrategicMerge,
                        ContainerCreatingStatusPatch(pod, now, host_ip).dump(), options);
    k8s::ObjectReference ref{"v1", "Pod", pod.namespace_name, pod.name, pod.uid, "", ""};
    events_->Record(ref, k8s::EventType::kWarning, "FailedMount",
                    MountFailureMessage(blocked->first, blocked->second));
  }
  queue_->Forget(key);
  queue_->AddAfter(key, std::chrono::seconds(1));
  return true;
}

void Simulator::HandleExec(const std::shared_ptr<const SimPod>& pod, const std::string& key,
                           const std::string& host_ip) {
  const auto now = WallClock::now();
  // Unset while the runtime has not taken the pod yet (then Has is true).
  const std::optional<ExecPodStatus> status = exec_->PodStatus(pod->uid);
  const bool known = status.has_value() || exec_->Has(pod->uid);
  if (pod->deleting) {
    if (!known) {
      RemovePod(*pod, key);
      return;
    }
    // SIGTERM, then SIGKILL after the grace period; the pod goes once every
    // process has exited (the runtime reports it and this runs again).
    if (status && status->stopped) {
      RemovePod(*pod, key);
      return;
    }
    std::chrono::seconds grace = pod->exec ? pod->exec->termination_grace : std::chrono::seconds(0);
    if (pod->deletion_time) {
      grace = std::max(std::chrono::seconds(0),
                       std::chrono::duration_cast<std::chrono::seconds>(*pod->deletion_time - now));
    }
    exec_->Stop(pod->uid, grace);
    queue_->Forget(key);
    return;
  }
  if (known) {
    if (!status) {
      return;  // published once the runtime has taken it
    }
    {
      MutexLock lock(mu_);
      if (written_version_[pod->uid] >= status->version) {
        return;
      }
    }
    if (!PatchStatus(*pod, ExecStatusPatch(*status, now), key)) {
      return;
    }
    MutexLock lock(mu_);
    uint64_t& written = written_version_[pod->uid];
    written = std::max(written, status->version);
    written_phase_[pod->uid] = status->phase;
    return;
  }
  if (pod->phase == "Succeeded" || pod->phase == "Failed") {
    return;
  }
  if (pod->phase == "Running") {
    // Running before this simulator started: its processes are gone with the
    // simulator that ran them.
    nlohmann::json patch = {{"status",
                             {{"phase", "Failed"},
                              {"reason", "NodeRestarted"},
                              {"message",
                               "hybridjob-sim --exec restarted; the pod's processes "
                               "ended with it"}}}};
    (void)PatchStatus(*pod, patch, key);
    return;
  }
  if (options_.kubelet_admission) {
    if (std::optional<AdmissionRefusal> refusal = Admit(*pod)) {
      spdlog::info("pod {} refused on {}: {}", key, pod->node_name, refusal->message);
      ++stats_.pods_refused;
      (void)PatchStatus(*pod, RefusalStatusPatch(*refusal), key);
      return;
    }
  }
  if (WaitForMounts(*pod, key, host_ip, now)) {
    return;
  }
  if (pod->exec == nullptr) {
    nlohmann::json patch = {
        {"status", {{"phase", "Failed"}, {"reason", "InvalidPod"}, {"message", pod->exec_error}}}};
    (void)PatchStatus(*pod, patch, key);
    return;
  }
  ExecLaunch launch;
  launch.pod = *pod->exec;
  launch.host_ip = host_ip;
  const ObjectNames names = ReferencedObjects(launch.pod);
  for (const auto& [names_of, informer, objects] :
       {std::tuple{&names.config_maps, config_maps_.get(), &launch.objects.config_maps},
        std::tuple{&names.secrets, secrets_.get(), &launch.objects.secrets}}) {
    for (const std::string& name : *names_of) {
      auto object = informer->store().Get(pod->namespace_name + "/" + name);
      if (object != nullptr && object->data != nullptr) {
        (*objects)[name] = *object->data;
      }
    }
  }
  for (const ExecVolume& volume : launch.pod.volumes) {
    if (volume.kind != ExecVolume::Kind::kClaim) {
      continue;
    }
    auto claim = claims_->store().Get(pod->namespace_name + "/" + volume.source);
    // A claim bound to no named volume (there is no such thing in a real
    // cluster) keeps its data under its own name.
    const std::string data_name = claim != nullptr && !claim->volume_name.empty()
                                      ? claim->volume_name
                                      : pod->namespace_name + "-" + volume.source;
    launch.claim_dirs[volume.name] = exec_->VolumeDir(data_name);
  }
  exec_->Run(std::move(launch));
  ++stats_.pods_started;
  queue_->Forget(key);
}

std::optional<std::pair<SimMount, MountState>> Simulator::BlockedMount(const SimPod& pod) {
  for (const SimMount& mount : pod.mounts) {
    const k8s::Informer<MountObject>& informer = mount.kind == SimMount::Kind::kClaim ? *claims_
                                                 : mount.kind == SimMount::Kind::kConfigMap
                                                     ? *config_maps_
                                                     : *secrets_;
    auto object = informer.store().Get(pod.namespace_name + "/" + mount.object);
    if (object == nullptr) {
      return std::pair{mount, MountState::kMissing};
    }
    if (!object->bound) {
      return std::pair{mount, MountState::kUnbound};
    }
  }
  return std::nullopt;
}

void Simulator::TrackAdmitted(const SimPod& pod, bool gone) {
  MutexLock lock(mu_);
  if (gone || pod.phase == "Succeeded" || pod.phase == "Failed") {
    auto node = admitted_.find(pod.node_name);
    if (node != admitted_.end()) {
      node->second.erase(pod.uid);
    }
    return;
  }
  if (pod.phase == "Running") {
    // Running before this simulator started, or admitted by it.
    admitted_[pod.node_name].emplace(pod.uid, pod.requests);
  }
}

std::optional<AdmissionRefusal> Simulator::Admit(const SimPod& pod) {
  // One lock for the check and the record: two pods racing for the last GPU
  // of a node are admitted one at a time, as by one kubelet.
  MutexLock lock(mu_);
  auto& on_node = admitted_[pod.node_name];
  if (on_node.contains(pod.uid)) {
    return std::nullopt;
  }
  scheduler::ResourceList used;
  for (const auto& [uid, requests] : on_node) {
    used += requests;
  }
  if (std::optional<AdmissionRefusal> refusal = AdmitPod(pod.requests, used, node_allocatable_)) {
    return refusal;
  }
  on_node.emplace(pod.uid, pod.requests);
  return std::nullopt;
}

void Simulator::HeartbeatLoop(int64_t shard, int64_t shards) {
  // This thread renews the Leases of nodes shard, shard + shards, ...
  const int64_t mine = (options_.nodes.count - shard + shards - 1) / shards;
  if (mine <= 0) {
    return;
  }
  // Spread renewals over the interval rather than in one burst, each on its
  // own deadline: the time a renewal takes must not stretch the period, or
  // with thousands of nodes a busy API server lets Leases expire.
  const auto interval =
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(options_.heartbeat_interval);
  const auto step =
      std::max<std::chrono::steady_clock::duration>(interval / mine, std::chrono::milliseconds(1));
  auto next = std::chrono::steady_clock::now() + step * shard / shards;
  int64_t index = shard;
  MutexLock lock(mu_);
  while (!lock.WaitUntil(stop_cv_, next, [this]() HJ_REQUIRES(mu_) { return stopping_; })) {
    const std::string name = NodeName(options_.nodes, index);
    index = index + shards < options_.nodes.count ? index + shards : shard;
    next += step;
    // After a stall of a whole interval, resume the schedule instead of
    // renewing everything at once.
    if (const auto now = std::chrono::steady_clock::now(); now > next + interval) {
      next = now;
    }
    if (lost_nodes_.contains(name)) {
      continue;  // a lost kubelet renews nothing
    }
    lock.Unlock();
    const nlohmann::json patch = {{"spec", {{"renewTime", MicroTimeNow()}}}};
    if (client_.Patch(k8s::resources::Leases(), kNodeLeaseNamespace, name, k8s::PatchType::kMerge,
                      patch.dump())) {
      ++stats_.heartbeats;
    }
    lock.Lock();
  }
}

void Simulator::MarkLost(const std::string& node, const std::string& why) {
  {
    MutexLock lock(mu_);
    if (!lost_nodes_.insert(node).second) {
      return;
    }
  }
  ++stats_.nodes_lost;
  spdlog::warn("node {} {}: no longer playing its kubelet", node, why);
}

bool Simulator::IsLost(const std::string& node) {
  MutexLock lock(mu_);
  return lost_nodes_.contains(node);
}

}  // namespace hybridjob::sim
