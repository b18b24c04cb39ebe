// The cluster spec handed to members once the gang is placed: who the members
// are and how each framework expects to learn it (TF_CONFIG, MASTER_ADDR and
// friends, DMLC_*, an MPI hostfile, or plain JSON).
//
// Delivery. Every member pod mounts the ConfigMap <job>-cluster at
// /etc/hybridjob; the kubelet starts no container of the pod before that
// ConfigMap exists, and the controller creates it only once the scheduler has
// placed the gang. The ConfigMap holds:
//   cluster.json   {"<role>": ["<host>:<port>", ...], ...} for every role
//   hostfile       MPI jobs: "<host> slots=<gpus or 1>" per non-launcher member
//   <role>.env     shell exports of the framework's variables for that role;
//                  values that depend on the member's index are computed from
//                  $HYBRIDJOB_INDEX, so the ConfigMap grows linearly with the
//                  job (a file per member would grow quadratically with
//                  TF_CONFIG and hit the 1 MiB object limit near 150 members).
// Jobs whose roles all have min == max know their membership before any pod
// exists, so their variables are plain container env. Elastic jobs have each
// container's command wrapped: /bin/sh sources /etc/hybridjob/<role>.env and
// execs the original command and args, so images need no change beyond having
// /bin/sh. A container without a command (image entrypoint) cannot be wrapped;
// it still gets the files.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <hybridjob/api/types.h>

namespace hybridjob::controller {

// The committed membership: for each role in spec order, how many members it
// has. Members of a role are always indices 0..count-1.
struct Membership {
  std::vector<std::pair<std::string, int32_t>> counts;

  int32_t Count(std::string_view role) const;
  int32_t Total() const;

  friend bool operator==(const Membership&, const Membership&) = default;
};

// Every role at maxReplicas: the membership of a job that is not elastic.
Membership FullMembership(const api::HybridJobSpec& spec);

// {"ps":1,"worker":2}, the kMembersAnnotation value.
std::string FormatMembership(const Membership& membership);
// Reads a kMembersAnnotation value against the spec: every role in spec order
// (missing ones count 0); nullopt if malformed, naming unknown roles or
// counts outside [0, maxReplicas].
std::optional<Membership> ParseMembership(std::string_view text, const api::HybridJobSpec& spec);

// An environment variable value that may depend on the member's index: a
// sequence of literal text and "index + offset" parts.
class EnvValue {
 public:
  struct Part {
    std::string literal;
    std::optional<int64_t> index_offset;  // set: this part is index + offset

    friend bool operator==(const Part&, const Part&) = default;
  };

  EnvValue() = default;
  explicit EnvValue(std::string literal) { Append(std::move(literal)); }
  static EnvValue IndexPlus(int64_t offset);

  EnvValue& Append(std::string literal);
  EnvValue& AppendIndexPlus(int64_t offset);

  // The value for the member with this index.
  std::string Render(int64_t index) const;
  // A POSIX shell word producing the value from $HYBRIDJOB_INDEX.
  std::string RenderShell() const;

  const std::vector<Part>& parts() const { return parts_; }
  friend bool operator==(const EnvValue&, const EnvValue&) = default;

 private:
  std::vector<Part> parts_;
};

struct EnvTemplate {
  std::string name;
  EnvValue value;
};

// The members' stable names: "<job>-<role>-<i>.<job>.<ns>.svc".
std::string MemberAddress(const api::HybridJob& job, std::string_view role, int64_t index);

// {"<role>": ["<host>:<port>", ...]} for every role, in spec order.
nlohmann::ordered_json ClusterJson(const api::HybridJob& job, const Membership& membership);

// The framework's variables for members of `role` (plus HYBRIDJOB_WORLD_SIZE
// and HYBRIDJOB_RANK for every framework).
std::vector<EnvTemplate> ClusterEnvironment(const api::HybridJob& job, const Membership& membership,
                                            std::string_view role);

// ClusterEnvironment rendered for one member.
std::map<std::string, std::string> MemberEnvironment(const api::HybridJob& job,
                                                     const Membership& membership,
                                                     std::string_view role, int64_t index);

// "<host> slots=<n>" per member of every role but the launcher: n is the
// member's GPUs of any of `gpu_resources`, at least 1.
std::string MpiHostfile(const api::HybridJob& job, const Membership& membership,
                        const std::vector<std::string>& gpu_resources);

// The shell file members of `role` source: one `export NAME=value` per line.
std::string RoleEnvFile(const api::HybridJob& job, const Membership& membership,
                        std::string_view role);

// GPUs a member of `role` asks for: per resource of `gpu_resources`, its
// limits (else requests), summed over resources and containers.
int64_t GpusPerMember(const api::ReplicaSpec& role, const std::vector<std::string>& gpu_resources);

}  // namespace hybridjob::controller
