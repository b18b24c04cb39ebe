#include "tinyproxy.h"

#include <arpa/inet.h>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <netinet/in.h>
#include <regex>
#include <sys/socket.h>
#include <unistd.h>

#include "test_cluster.h"

namespace hybridjob::testing {
namespace {

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Whether something accepts TCP connections on 127.0.0.1:port.
bool Accepts(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool connected =
      ::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) == 0;
  ::close(fd);
  return connected;
}

int next_instance = 0;

}  // namespace

Tinyproxy::Tinyproxy(const std::string& connect_port, const std::string& credentials) {
  dir_ = std::filesystem::temp_directory_path().string() + "/hybridjob-proxy-" +
         std::to_string(::getpid()) + "-" + std::to_string(next_instance++);
  std::filesystem::create_directories(dir_);
  port_ = FreeLoopbackPort();
  std::ofstream conf(dir_ + "/tinyproxy.conf");
  conf << "Port " << port_ << "\nListen 127.0.0.1\nTimeout 60\nMaxClients 64\n"
       << "LogFile \"" << log_path() << "\"\nLogLevel Connect\nAllow 127.0.0.1\n"
       << "DisableViaHeader Yes\n";
  if (!connect_port.empty()) {
    conf << "ConnectPort " << connect_port << "\n";
  }
  if (!credentials.empty()) {
    conf << "BasicAuth " << credentials << "\n";
  }
  conf.close();
  process_ = std::make_unique<ChildProcess>(
      std::vector<std::string>{"/usr/bin/tinyproxy", "-d", "-c", dir_ + "/tinyproxy.conf"},
      dir_ + "/stdout.log");
  // Ready once it accepts connections.
  ready_ = WaitFor([&] { return Accepts(port_); }, std::chrono::seconds(10));
}

Tinyproxy::~Tinyproxy() {
  process_->Stop(std::chrono::seconds(5));
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

int Tinyproxy::Tunnels() const {
  const std::string log = ReadText(log_path());
  const std::regex connect(R"(Request \(file descriptor [0-9]+\): CONNECT )");
  return static_cast<int>(std::distance(std::sregex_iterator(log.begin(), log.end(), connect), {}));
}

std::string Tinyproxy::Log() const {
  return ReadText(log_path()) + ReadText(dir_ + "/stdout.log");
}

}  // namespace hybridjob::testing
