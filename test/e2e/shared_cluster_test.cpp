// The cluster a binary's tests share is emptied before each of them: what an
// earlier test left is gone, finalizers and namespaces included, and what the
// cluster came up with stays.
#include <cstdlib>
#include <fstream>

#include <gtest/gtest.h>

#include <hybridjob/k8s/api_status.h>

#include "test_cluster.h"

namespace hybridjob::testing {
namespace {

TEST(SharedClusterTest, WhatATestLeftIsGoneForTheNextAndTheClustersOwnObjectsStay) {
  if (std::getenv("HYBRIDJOB_SHARED_CLUSTER_DIR") == nullptr) {  // NOLINT(concurrency-mt-unsafe)
    GTEST_SKIP() << "runs under ctest, on the cluster this binary's tests share";
  }
  std::string leftover_namespace;
  int leftover_pid = -1;
  {
    PrivateCluster earlier;
    ASSERT_TRUE(earlier.ok());
    auto client = earlier.AdminClient();
    ASSERT_NE(client, nullptr);
    TestNamespace ns(*client, "left");
    leftover_namespace = ns.name();
    // Objects a test may leave behind, two of them held by finalizers that
    // nothing is left to remove.
    const nlohmann::json config_map = {
        {"apiVersion", "v1"},
        {"kind", "ConfigMap"},
        {"metadata", {{"name", "left"}, {"finalizers", nlohmann::json::array({"test/hold"})}}}};
    ASSERT_TRUE(client->Create(k8s::resources::ConfigMaps(), "default", config_map).ok());
    const nlohmann::json volume = {
        {"apiVersion", "v1"},
        {"kind", "PersistentVolume"},
        {"metadata", {{"name", "left"}, {"finalizers", nlohmann::json::array({"test/hold"})}}},
        {"spec",
         {{"capacity", {{"storage", "1Gi"}}},
          {"accessModes", nlohmann::json::array({"ReadWriteOnce"})},
          {"hostPath", {{"path", "/nonexistent"}}}}}};
    ASSERT_TRUE(client->Create(k8s::resources::PersistentVolumes(), "", volume).ok());
    const nlohmann::json lease = {{"apiVersion", "coordination.k8s.io/v1"},
                                  {"kind", "Lease"},
                                  {"metadata", {{"name", "gang-scheduler"}}},
                                  {"spec", {{"holderIdentity", "gone"}}}};
    ASSERT_TRUE(client->Create(k8s::resources::Leases(), leftover_namespace, lease).ok());
    const nlohmann::json node = {
        {"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", {{"name", "left"}}}};
    ASSERT_TRUE(client->Create(k8s::resources::Nodes(), "", node).ok());
    // A process a test killed at its timeout would leave running, naming
    // the test's directory as the binaries do.
    std::string pid;
    ASSERT_EQ(RunCommand("python3 -c 'import time; time.sleep(300)' " + earlier.dir() +
                             "/leftover >/dev/null 2>&1 & echo $!",
                         &pid),
              0);
    leftover_pid = std::stoi(pid);
    // TestNamespace deletes its namespace without waiting: the next test
    // must not find it, not even terminating.
  }
  PrivateCluster next;
  ASSERT_TRUE(next.ok());
  auto client = next.AdminClient();
  ASSERT_NE(client, nullptr);
  EXPECT_TRUE(
      k8s::IsNotFound(client->Get(k8s::resources::ConfigMaps(), "default", "left").status()));
  EXPECT_TRUE(
      k8s::IsNotFound(client->Get(k8s::resources::PersistentVolumes(), "", "left").status()));
  EXPECT_TRUE(k8s::IsNotFound(client->Get(k8s::resources::Nodes(), "", "left").status()));
  EXPECT_TRUE(
      k8s::IsNotFound(client->Get(k8s::resources::Namespaces(), "", leftover_namespace).status()));
  // Killed (a zombie until its new parent reaps it, at most).
  EXPECT_TRUE(WaitFor([&] {
    std::ifstream stat("/proc/" + std::to_string(leftover_pid) + "/stat");
    std::string pid, command, state;
    return !(stat >> pid >> command >> state) || state == "Z";
  }));
  // What the cluster came up with.
  EXPECT_TRUE(client->Get(k8s::resources::Namespaces(), "", "default").ok());
  EXPECT_TRUE(client->Get(k8s::resources::ServiceAccounts(), "default", "default").ok());
  EXPECT_TRUE(client->Get(k8s::resources::Services(), "default", "kubernetes").ok());
  // A fresh directory of its own for each test.
  EXPECT_NE(next.dir(), PrivateCluster().dir());
}

}  // namespace
}  // namespace hybridjob::testing
