#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <hybridjob/controller/ssh_keys.h>

namespace hybridjob::controller {
namespace {

std::string RunCommand(const std::string& command) {
  std::string output;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) {
    return output;
  }
  char buffer[512];
  while (fgets(buffer, sizeof buffer, pipe) != nullptr) {
    output += buffer;
  }
  pclose(pipe);
  return output;
}

TEST(SshKeysTest, OpenSshDerivesThePublicKeyWeWroteFromThePrivateKey) {
  Result<SshKeyPair> pair = GenerateSshKeyPair("job-ssh");
  ASSERT_TRUE(pair.ok()) << pair.status().ToString();
  EXPECT_EQ(pair->private_key_pem.rfind("-----BEGIN EC PRIVATE KEY-----\n", 0), 0u);
  EXPECT_EQ(pair->public_key.rfind("ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTY", 0), 0u)
      << pair->public_key;
  EXPECT_EQ(pair->public_key.substr(pair->public_key.size() - 9), " job-ssh\n");

  // ssh-keygen (openssh-client, from install-deps) reads the key as ssh does.
  const std::string file = ::testing::TempDir() + "/ssh-key-" + std::to_string(::getpid());
  { std::ofstream(file) << pair->private_key_pem; }
  ::chmod(file.c_str(), 0600);
  const std::string derived = RunCommand("ssh-keygen -y -f '" + file + "' 2>&1");
  std::filesystem::remove(file);
  const std::string ours = pair->public_key.substr(0, pair->public_key.rfind(' '));
  EXPECT_EQ(derived.substr(0, ours.size()), ours) << derived;

  Result<SshKeyPair> other = GenerateSshKeyPair("");
  ASSERT_TRUE(other.ok());
  EXPECT_NE(other->private_key_pem, pair->private_key_pem);
  EXPECT_EQ(other->public_key.back(), '\n');
  EXPECT_EQ(other->public_key.find(' ', 20), std::string::npos) << "no comment, no space";
}

}  // namespace
}  // namespace hybridjob::controller
