// Access to the local cluster started by the ctest fixture, and a namespace
// per test so tests can run side by side.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include <hybridjob/k8s/config.h>
#include <hybridjob/k8s/rest_client.h>

namespace hybridjob::testing {

// The fixture's directory (HYBRIDJOB_TEST_CLUSTER_DIR); empty when unset.
std::string ClusterDir();
std::string KubeconfigPath();
// Directory of the cached kube-* binaries the cluster runs (kubectl lives there).
std::string KubernetesBinDir();

Result<k8s::ClientConfig> AdminConfig();
// An admin client; aborts the test binary with a clear message when the
// cluster is unreachable, since no integration test can do anything then.
std::unique_ptr<k8s::RestClient> AdminClient();

// Polls `condition` every 50 ms until true or the timeout passes.
bool WaitFor(const std::function<bool()>& condition,
             std::chrono::milliseconds timeout = std::chrono::seconds(30));

// A fresh namespace with its default ServiceAccount (pods need it), deleted
// when the object goes.
class TestNamespace {
 public:
  explicit TestNamespace(k8s::ApiClient& client, const std::string& prefix = "t");
  ~TestNamespace();
  TestNamespace(const TestNamespace&) = delete;
  TestNamespace& operator=(const TestNamespace&) = delete;

  const std::string& name() const { return name_; }

 private:
  k8s::ApiClient& client_;
  std::string name_;
};

// The cluster a test runs the whole system on. Under ctest, the tests of a
// binary that shares one (HYBRIDJOB_SHARED_CLUSTER_DIR, set with a resource
// lock so they run one at a time) get that control plane: started by the
// first of them, emptied back to how it came up before each later one, and
// stopped by a cleanup test after the last. Otherwise the test starts a
// cluster of its own and stops and removes it in the destructor.
class PrivateCluster {
 public:
  PrivateCluster();
  ~PrivateCluster();
  PrivateCluster(const PrivateCluster&) = delete;
  PrivateCluster& operator=(const PrivateCluster&) = delete;

  bool ok() const { return ok_; }
  bool shared() const { return shared_; }
  // A directory of this test's own, for its logs and files.
  const std::string& dir() const { return dir_; }
  std::string kubeconfig() const { return cluster_dir_ + "/kubeconfig"; }
  // The kubectl of the cluster's Kubernetes version.
  std::string kubectl() const;
  std::unique_ptr<k8s::RestClient> AdminClient() const;
  // Kills a component (etcd, apiserver, controller-manager) and starts it again.
  bool Restart(const std::string& component) const;
  // Stops a component; only a cluster of the test's own (a shared one would
  // stay broken for the tests after this one).
  bool Stop(const std::string& component) const;
  // Compacts etcd at its current revision (what etcdctl compact does), so
  // every watch from an older resourceVersion ends with 410 Gone. Returns the
  // revision compacted, or -1 with a test failure added.
  int64_t CompactEtcd() const;

 private:
  // Starts the shared cluster and records its baseline, or empties it.
  bool UseShared(const std::string& shared_dir);

  std::string cluster_dir_;
  std::string dir_;
  bool shared_ = false;
  bool ok_ = false;
};

// The repository's root, and the directory of the built binaries (build/bin).
std::string SourceDir();
std::string BinaryDir();
// The repository's hack/local-cluster.sh.
std::string LocalClusterScript();

// A TCP port on 127.0.0.1 that nothing listened on a moment ago and that
// this process has not handed out before, for a listener a test starts (the
// binaries take no port 0); -1 when none is found. It lies below the kernel's
// ephemeral range, so no process binding port 0 can take it first
// (hack/free-port.py does the same for the scripts).
int FreeLoopbackPort();

// Runs a command, returns its exit code; stdout+stderr into *output if given.
int RunCommand(const std::string& command, std::string* output = nullptr);

}  // namespace hybridjob::testing
