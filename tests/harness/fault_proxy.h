#pragma once
// A TCP proxy on loopback for fault injection (issue 3): clients connect to port(), bytes are
// forwarded to 127.0.0.1:<target_port>. The mode can change at any time:
//   Pass       forward both ways;
//   Delay      forward, sleeping delay_ms before each forwarded chunk (slow network);
//   Refuse     new connections are reset at once; open ones are cut (server gone);
//   Blackhole  new connections are accepted and read, nothing is ever answered (dead peer /
//              dropped packets); open ones stop forwarding. Leaving Blackhole closes them.
#include <atomic>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace kakeya::testing {

class FaultProxy {
 public:
  enum class Mode { Pass, Delay, Refuse, Blackhole };

  // Listens on a free loopback port. nullptr if it cannot listen.
  static std::unique_ptr<FaultProxy> start(int target_port);
  ~FaultProxy();
  FaultProxy(const FaultProxy&) = delete;
  FaultProxy& operator=(const FaultProxy&) = delete;

  int port() const { return port_; }
  void set_mode(Mode m, int delay_ms = 0);
  Mode mode() const { return mode_.load(); }
  int accepted() const { return accepted_.load(); }  // connections accepted so far
  long long bytes_to_server() const { return up_bytes_.load(); }    // forwarded client -> server
  long long bytes_to_client() const { return down_bytes_.load(); }  // forwarded server -> client

 private:
  FaultProxy(int listen_fd, int port, int target_port);
  void accept_loop();
  void serve(int client_fd, int generation);

  int listen_fd_, port_, target_port_;
  std::atomic<Mode> mode_{Mode::Pass};
  std::atomic<int> delay_ms_{0};
  std::atomic<int> generation_{0};  // bumped when a mode change must cut open connections
  std::atomic<int> accepted_{0};
  std::atomic<long long> up_bytes_{0}, down_bytes_{0};
  std::atomic<bool> stop_{false};
  std::thread acceptor_;
  std::mutex mu_;
  std::vector<std::thread> workers_;
};

}  // namespace kakeya::testing
