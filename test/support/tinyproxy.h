// Debian's tinyproxy, a real HTTP proxy, in the foreground on a free loopback
// port for a test; stopped when the object goes.
#pragma once

#include <memory>
#include <string>

#include "child_process.h"

namespace hybridjob::testing {

class Tinyproxy {
 public:
  // `connect_port`: the only port it tunnels to (CONNECT); empty: any.
  // `credentials`: "user password" it asks for (BasicAuth); empty: none.
  explicit Tinyproxy(const std::string& connect_port = "", const std::string& credentials = "");
  ~Tinyproxy();
  Tinyproxy(const Tinyproxy&) = delete;
  Tinyproxy& operator=(const Tinyproxy&) = delete;

  bool ready() const { return ready_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::string log_path() const { return dir_ + "/tinyproxy.log"; }
  // The CONNECT requests it logged.
  int Tunnels() const;
  std::string Log() const;
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
  int port_ = -1;
  bool ready_ = false;
  std::unique_ptr<ChildProcess> process_;
};

}  // namespace hybridjob::testing
