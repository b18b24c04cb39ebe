// hybridjob-sim --exec: runs the containers of pods bound to simulated nodes
// as local processes, the way a kubelet and a container runtime would.
//
// Each container runs in a private mount and UTS namespace (so root is
// needed): its root is an overlay of the host's root, so the host's programs
// are its image and what it writes stays its own; the pod's volumes are bound
// at their mount paths; /etc/hosts stands in for cluster DNS; its hostname is
// the pod's. Members share the host's network and each has its own loopback
// address (127.1.x.y) as pod IP, so a program should listen on its pod's
// address (its hostname resolves to it), not on every address.
//
// One supervisor thread owns every pod's processes and state; callers hand it
// commands and read the statuses it publishes.
#pragma once

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <hybridjob/common/mutex.h>
#include <hybridjob/common/status.h>
#include <hybridjob/sim/exec_pod.h>

namespace hybridjob::sim {

struct ExecRuntimeOptions {
  // Pods' root overlays, volumes and logs, and claims' data. Created if
  // missing; what the runtime made is removed at Shutdown.
  std::filesystem::path state_dir;
  std::string cluster_domain = "cluster.local";
  // The PATH of a container by its image (ParseExecImagePaths); other images
  // get kExecDefaultPath.
  std::map<std::string, std::string> image_paths;
  // Called (from the supervisor thread, no lock held) with "<ns>/<name>" when
  // a pod's published status changed.
  std::function<void(const std::string&)> on_change;
};

// What the runtime needs to run a pod: the pod, the ConfigMaps and Secrets it
// names as they are now, and the host directory of each claim volume.
struct ExecLaunch {
  ExecPod pod;
  PodObjects objects;
  std::map<std::string, std::filesystem::path> claim_dirs;  // volume name -> directory
  std::string host_ip;
};

// One run of a container's output.
struct ExecLogFile {
  std::filesystem::path file;
  std::string uid;
  std::string container;
  int run = 0;  // the container's restart count when it wrote this
};

class ExecRuntime {
 public:
  // Checks that this host can run pods (root, mount namespaces, overlayfs on
  // the state directory's file system) and starts the supervisor.
  static Result<std::unique_ptr<ExecRuntime>> Create(ExecRuntimeOptions options);
  ~ExecRuntime();
  ExecRuntime(const ExecRuntime&) = delete;
  ExecRuntime& operator=(const ExecRuntime&) = delete;

  // Starts the pod's init containers, then its containers. Once per uid.
  void Run(ExecLaunch launch);
  // SIGTERM to every process of the pod, SIGKILL after `grace`.
  void Stop(const std::string& uid, std::chrono::seconds grace);
  // Kills what still runs and forgets the pod, removing its files (not its
  // claims' data).
  void Remove(const std::string& uid);
  // Rewrites the ConfigMap and Secret volumes of running pods that show this
  // object, as a kubelet's periodic sync does.
  void UpdateObject(const std::string& namespace_name, bool secret, const std::string& name,
                    std::shared_ptr<const ObjectData> data);

  bool Has(const std::string& uid) const;
  std::optional<ExecPodStatus> PodStatus(const std::string& uid) const;
  // The file a container's current (or previous) run writes its output to.
  Result<ExecLogFile> LogFile(const std::string& namespace_name, const std::string& pod,
                              const std::string& container, bool previous) const;
  // Whether the run that writes `log` is still running.
  bool Writing(const ExecLogFile& log) const;

  // The directory that holds a persistent volume's data.
  std::filesystem::path VolumeDir(const std::string& volume_name) const;

  // Stops every pod (SIGTERM, then SIGKILL after a few seconds) and the
  // supervisor.
  void Shutdown();

 private:
  struct PodRun;
  struct Command;
  explicit ExecRuntime(ExecRuntimeOptions options, std::vector<std::string> host_mounts);

  void Enqueue(std::unique_ptr<Command> command);
  void Loop();
  void Apply(Command& command);
  void StartPod(PodRun& pod);
  void Advance(PodRun& pod, ExecClock::time_point now);
  void StartContainer(PodRun& pod, bool init, size_t index, ExecClock::time_point now);
  void Reap(PodRun& pod, ExecClock::time_point now);
  // After a container's run ended (or could not start): the next init
  // container, a restart at its back-off, or the pod's failure.
  void AfterExit(PodRun& pod, bool init, size_t index, ExecClock::time_point now, bool start_error);
  // A ConfigMap or Secret changed: the pod's volumes that show it are
  // written again (an atomic swap of ..data).
  void RewriteVolumesShowing(PodRun& pod, bool secret, const std::string& name);
  void SignalAll(PodRun& pod, int signal);
  void RefreshHosts();
  void Publish(PodRun& pod);
  void RemoveFiles(PodRun& pod);

  ExecRuntimeOptions options_;
  std::vector<std::string> host_mounts_;  // bound into every container's root

  // Owned by the supervisor thread.
  std::map<std::string, std::unique_ptr<PodRun>> pods_;  // by uid
  std::vector<bool> ips_in_use_;
  std::vector<std::string> changed_;  // keys to report after this pass

  mutable Mutex mu_;
  std::condition_variable wake_;
  bool stopping_ HJ_GUARDED_BY(mu_) = false;
  std::vector<std::unique_ptr<Command>> commands_ HJ_GUARDED_BY(mu_);
  struct Published {
    ExecPodStatus status;
    // Per container, the log file of each run, and the run now going.
    std::map<std::string, std::vector<std::filesystem::path>> logs;
    std::map<std::string, bool> running;
  };
  std::map<std::string, Published> published_ HJ_GUARDED_BY(mu_);     // by uid
  std::map<std::string, std::string> uid_by_key_ HJ_GUARDED_BY(mu_);  // "<ns>/<name>" -> uid
  std::thread supervisor_;
};

}  // namespace hybridjob::sim
