// Names HybridJob derives from a job, and the DNS rules they must obey.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace hybridjob::api {

inline constexpr size_t kMaxDnsLabelLength = 63;
inline constexpr size_t kMaxDnsSubdomainLength = 253;

// What HybridJob adds to every member pod; templates must not use these.
// The cluster ConfigMap is mounted at kClusterMountPath.
inline constexpr std::string_view kClusterVolumeName = "hybridjob-cluster";
inline constexpr std::string_view kClusterMountPath = "/etc/hybridjob";
// The code archive is unpacked by this init container into this emptyDir volume.
inline constexpr std::string_view kCodeVolumeName = "hybridjob-code";
inline constexpr std::string_view kCodeInitContainerName = "hybridjob-code";
// MPI jobs: the job's SSH key Secret is mounted at kSshMountPath in the
// launcher and the workers, and the launcher's init container waits until
// every worker in the hostfile accepts SSH.
inline constexpr std::string_view kSshVolumeName = "hybridjob-ssh";
inline constexpr std::string_view kSshMountPath = "/root/.ssh";
inline constexpr std::string_view kWaitForWorkersContainerName = "hybridjob-wait-for-workers";
// The artifacts uploader mounts the job volume read-only here.
inline constexpr std::string_view kArtifactsMountPath = "/hybridjob-artifacts";

// RFC 1035 label: [a-z]([-a-z0-9]*[a-z0-9])?, at most 63 characters. Service
// names and the role names that become part of hostnames must be one.
bool IsDns1035Label(std::string_view value);
// RFC 1123 label: [a-z0-9]([-a-z0-9]*[a-z0-9])?, at most 63 characters.
bool IsDns1123Label(std::string_view value);
// RFC 1123 subdomain: dot-separated 1123 labels, at most 253 characters.
bool IsDns1123Subdomain(std::string_view value);
// The name part of a qualified name, or a non-empty label value: at most 63 of
// [-_.A-Za-z0-9], starting and ending with a letter or digit.
bool IsQualifiedNamePart(std::string_view value);
// A label or annotation key: [prefix/]name, the prefix a DNS subdomain.
bool IsQualifiedName(std::string_view key);

// <job>-<role>-<index>: the hostname of one member, and its pod's name in
// run 0.
std::string MemberHostname(std::string_view job, std::string_view role, int64_t index);
// A member's pod name: its hostname in run 0, <hostname>-run<run> in a later
// run, so that the ended pods of an earlier run (spec.runHistoryLimit) and
// their logs stay beside the new run's.
std::string MemberPodName(std::string_view job, std::string_view role, int64_t index,
                          int64_t run = 0);
// <job>: the headless Service every member's subdomain points at.
std::string HeadlessServiceName(std::string_view job);
// <job>-cluster: the ConfigMap carrying the committed cluster spec.
std::string ClusterConfigMapName(std::string_view job);
// <job>-artifacts: the pod that uploads spec.artifacts after the job succeeded.
std::string ArtifactsPodName(std::string_view job);
// <job>-ssh: an MPI job's SSH key Secret (type kubernetes.io/ssh-auth).
std::string SshSecretName(std::string_view job);
// <job>-<volume>: a PVC the job creates.
std::string VolumeClaimName(std::string_view job, std::string_view volume);
// <job>-tensorboard: the TensorBoard Deployment and Service.
std::string TensorboardName(std::string_view job);
// <job>-<role>-<index>.<job>.<namespace>.svc: a member's stable DNS name.
std::string MemberHost(std::string_view job, std::string_view ns, std::string_view role,
                       int64_t index);

}  // namespace hybridjob::api
