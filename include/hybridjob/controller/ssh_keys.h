// The per-job SSH key of an MPI job: mpirun on the launcher starts its
// processes on the workers over SSH, as mpi-operator's launchers do. The
// controller makes a key pair when it creates the job's Secret; the members
// mount it (children.h).
#pragma once

#include <string>

#include <hybridjob/common/status.h>

namespace hybridjob::controller {

struct SshKeyPair {
  std::string private_key_pem;  // "-----BEGIN EC PRIVATE KEY-----" (SEC 1), as OpenSSH reads it
  std::string public_key;  // "ecdsa-sha2-nistp256 AAAA... <comment>\n", an authorized_keys line
};

// A fresh ECDSA P-256 key pair from the system's random source.
Result<SshKeyPair> GenerateSshKeyPair(const std::string& comment);

}  // namespace hybridjob::controller
