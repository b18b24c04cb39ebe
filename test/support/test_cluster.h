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

// A cluster of the test's own, for tests that restart or stop its parts.
// Started in the constructor, stopped and removed in the destructor.
class PrivateCluster {
 public:
  PrivateCluster();
  ~PrivateCluster();
  PrivateCluster(const PrivateCluster&) = delete;
  PrivateCluster& operator=(const PrivateCluster&) = delete;

  bool ok() const { return ok_; }
  const std::string& dir() const { return dir_; }
  std::string kubeconfig() const { return dir_ + "/kubeconfig"; }
  std::unique_ptr<k8s::RestClient> AdminClient() const;
  // Kills a component (etcd, apiserver, controller-manager) and starts it again.
  bool Restart(const std::string& component) const;
  bool Stop(const std::string& component) const;
  // Compacts etcd at its current revision (what etcdctl compact does), so
  // every watch from an older resourceVersion ends with 410 Gone. Returns the
  // revision compacted, or -1 with a test failure added.
  int64_t CompactEtcd() const;

 private:
  std::string dir_;
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
