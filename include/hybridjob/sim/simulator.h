// hybridjob-sim's shell: registers the simulated nodes, keeps their Leases
// fresh, and plays the kubelet for pods bound to them (decisions come from
// kubelet.h). Owns its threads; Stop() joins them and removes the nodes.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <hybridjob/common/mutex.h>
#include <hybridjob/k8s/api_client.h>
#include <hybridjob/k8s/event_recorder.h>
#include <hybridjob/k8s/informer.h>
#include <hybridjob/k8s/workqueue.h>
#include <hybridjob/sim/exec_runtime.h>
#include <hybridjob/sim/kubelet.h>
#include <hybridjob/sim/kubelet_server.h>
#include <hybridjob/sim/node_factory.h>

namespace hybridjob::sim {

struct SimulatorOptions {
  NodePoolSpec nodes;
  std::chrono::milliseconds heartbeat_interval{std::chrono::seconds(40)};
  int workers = 16;
  bool keep_nodes = false;  // leave the nodes registered on Stop()
  // Refuse a bound pod that does not fit beside those already admitted on its
  // node (phase Failed, reason OutOf<resource>), as a kubelet does.
  bool kubelet_admission = true;
  // Run the containers of bound pods as local processes (exec_runtime.h)
  // instead of pretending; their state lives in this directory.
  std::optional<std::filesystem::path> exec_dir;
  // With exec_dir: the PATH containers of these images run with
  // (ExecRuntimeOptions::image_paths).
  std::map<std::string, std::string> exec_image_paths;
};

struct SimulatorStats {
  std::atomic<uint64_t> nodes_registered{0};
  std::atomic<uint64_t> pods_started{0};
  std::atomic<uint64_t> pods_finished{0};
  std::atomic<uint64_t> pods_removed{0};
  std::atomic<uint64_t> write_errors{0};
  std::atomic<uint64_t> heartbeats{0};
  std::atomic<uint64_t> nodes_lost{0};
  std::atomic<uint64_t> pods_refused{0};   // by the kubelet's admission
  std::atomic<uint64_t> mounts_waited{0};  // pods held in ContainerCreating (first time each)
};

// What the kubelet needs of an object a pod's volumes or environment name:
// whether it exists, and for a claim whether it is Bound and to which volume.
// In exec mode, a ConfigMap's or Secret's data too.
struct MountObject {
  std::string namespace_name;
  std::string name;
  bool bound = false;
  std::string volume_name;
  std::shared_ptr<const ObjectData> data;
};

// What the simulator needs of a Node it watches: whether it still plays the
// kubelet there.
struct SimNode {
  std::string name;
  // The Ready condition was set to something other than True by someone else
  // (a test, or the node lifecycle controller): the node is treated as lost.
  bool reported_not_ready = false;
};

class Simulator {
 public:
  Simulator(k8s::ApiClient& client, SimulatorOptions options);
  ~Simulator();
  Simulator(const Simulator&) = delete;
  Simulator& operator=(const Simulator&) = delete;

  // Registers every node (idempotent), then starts playing the kubelet.
  Status Start();
  void Stop();

  const SimulatorStats& stats() const { return stats_; }
  std::vector<std::string> NodeNames() const;

 private:
  Status RegisterNodes();
  Status RegisterNode(int64_t index);
  void DeleteNodes();
  void Work();
  void HeartbeatLoop(int64_t shard, int64_t shards);
  void Handle(const std::string& key);
  // Handle, when containers really run.
  void HandleExec(const std::shared_ptr<const SimPod>& pod, const std::string& key,
                  const std::string& host_ip);
  // Writes a status patch of the pod; false after an error (requeued).
  bool PatchStatus(const SimPod& pod, const nlohmann::json& patch, const std::string& key);
  // Deletes the pod for good, once its containers have stopped.
  void RemovePod(const SimPod& pod, const std::string& key);
  // Holds a pod whose volumes cannot be set up yet in ContainerCreating; true
  // when it is held.
  bool WaitForMounts(const SimPod& pod, const std::string& key, const std::string& host_ip,
                     WallClock::time_point now);
  std::string PodIp(const SimPod& pod) const;
  // The log a `kubectl logs` asks the kubelet endpoint for; called on its threads.
  Result<ContainerLogSource> ContainerLog(const ContainerLogRequest& request) const;
  void MarkLost(const std::string& node, const std::string& why);
  bool IsLost(const std::string& node);
  // The kubelet's admission of a pod about to start: nothing when it fits
  // (it is then counted on its node), else why it is refused.
  std::optional<AdmissionRefusal> Admit(const SimPod& pod);
  // The first of the pod's mounts the kubelet cannot set up yet (a claim not
  // Bound, a ConfigMap or Secret missing), as the informers last saw them.
  std::optional<std::pair<SimMount, MountState>> BlockedMount(const SimPod& pod);
  // Keeps the admitted pods of each node in step with the pods' phases.
  void TrackAdmitted(const SimPod& pod, bool gone);

  k8s::ApiClient& client_;
  SimulatorOptions options_;
  SimulatorStats stats_;
  std::unordered_map<std::string, int64_t> node_index_;  // fixed after construction
  scheduler::ResourceList node_allocatable_;             // every node's, from the pool spec

  std::unique_ptr<k8s::Informer<SimPod>> pods_;
  std::unique_ptr<k8s::Informer<SimNode>> nodes_;
  std::unique_ptr<k8s::WorkQueue> queue_;
  std::unique_ptr<k8s::EventRecorder> events_;  // FailedMount, as the kubelet says it
  // What pods' volumes name: claims (true when Bound), ConfigMaps, Secrets.
  std::unique_ptr<k8s::Informer<MountObject>> claims_;
  std::unique_ptr<k8s::Informer<MountObject>> config_maps_;
  std::unique_ptr<k8s::Informer<MountObject>> secrets_;
  std::unique_ptr<ExecRuntime> exec_;  // exec mode only
  // The nodes' kubelet endpoint: container logs (the runtime's files in exec
  // mode, synthetic ones otherwise); exec, attach and port-forward refused.
  std::unique_ptr<KubeletServer> kubelet_server_;
  std::vector<std::thread> workers_;
  std::vector<std::thread> heartbeat_threads_;

  Mutex mu_;
  std::condition_variable stop_cv_;
  bool stopping_ HJ_GUARDED_BY(mu_) = false;
  bool started_ HJ_GUARDED_BY(mu_) = false;
  // Phase this simulator last wrote per pod uid, so a stale cache entry does
  // not make it report the same transition twice.
  std::unordered_map<std::string, std::string> written_phase_ HJ_GUARDED_BY(mu_);
  // Exec mode: the runtime's status version last written per pod uid.
  std::unordered_map<std::string, uint64_t> written_version_ HJ_GUARDED_BY(mu_);
  // Nodes given up: deleted, or reported not Ready, by someone else. Their
  // Leases are no longer renewed nor their pods acted on, as with a crashed
  // kubelet, and they are not registered again while the simulator runs.
  std::unordered_set<std::string> lost_nodes_ HJ_GUARDED_BY(mu_);
  // Pods the kubelet admitted and that still hold their node's resources:
  // node -> pod uid -> requests.
  std::unordered_map<std::string, std::unordered_map<std::string, scheduler::ResourceList>>
      admitted_ HJ_GUARDED_BY(mu_);
};

}  // namespace hybridjob::sim
