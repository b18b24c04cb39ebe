// Fuzzes kubeconfig parsing with arbitrary text.
//
// Contracts checked besides crashes: a refused kubeconfig is refused with a
// message, and an accepted one names an http(s) server without a trailing
// slash and has a client key exactly when it has a client certificate; an
// exec plugin it keeps has a command, a supported apiVersion and a
// non-interactive mode.
//
// File references (certificate-authority, client-certificate, ...) resolve
// against a directory that does not exist. Inputs naming device or process
// files are skipped: reading /dev/zero would never end, and reading files is
// not what this target tests.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <string>
#include <string_view>

#include <hybridjob/k8s/config.h>

namespace {

namespace k8s = hybridjob::k8s;

[[noreturn]] void Fail(std::string_view what, std::string_view input) {
  std::cerr << "contract broken: " << what << "\n" << input << "\n";
  std::abort();
}

bool NamesSpecialFiles(std::string_view input) {
  for (std::string_view dir : {"dev", "proc", "sys"}) {
    if (input.find(dir) != std::string_view::npos) {
      return true;
    }
  }
  return false;
}

bool StartsWith(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  if (NamesSpecialFiles(input)) {
    return 0;
  }
  for (const std::string& context : {std::string(), std::string("fuzz")}) {
    auto config = k8s::ParseKubeconfig(input, "/nonexistent/kubeconfig-dir", context);
    if (!config.ok()) {
      if (config.status().ok() || config.status().message().empty()) {
        Fail("refused without a message", input);
      }
      continue;
    }
    if (!StartsWith(config->server, "https://") && !StartsWith(config->server, "http://")) {
      Fail("server is not an http(s) URL", input);
    }
    if (config->server.back() == '/') {
      Fail("server keeps a trailing slash", input);
    }
    if (config->client_cert_pem.empty() != config->client_key_pem.empty()) {
      Fail("client certificate without key, or key without certificate", input);
    }
    if (config->exec) {
      const k8s::ExecConfig& exec = *config->exec;
      if (exec.command.empty()) {
        Fail("exec plugin without a command", input);
      }
      if (exec.api_version != "client.authentication.k8s.io/v1" &&
          exec.api_version != "client.authentication.k8s.io/v1beta1") {
        Fail("exec plugin with an unsupported apiVersion", input);
      }
      if (exec.interactive_mode != "Never" && exec.interactive_mode != "IfAvailable") {
        Fail("exec plugin that may be interactive", input);
      }
    }
  }
  return 0;
}
