// kakeya-test-job: the command behind the integration tests' presets. It records each execution
// in a ledger (for exactly-once checks), prints log lines, sleeps, optionally writes a declared
// output, appends "<nonce> <runner> <start_ms> <end_ms>" to <ledger>.spans when it finishes
// (concurrency checks), optionally leaves a grandchild that ignores SIGTERM (process-group timeout checks),
// prints raw bytes given in hex (--print-hex: job output that is not UTF-8), and exits with a chosen code. Configured by flags; the ledger path comes from the
// KAKEYA_TEST_LEDGER environment variable (allow-listed by the test catalog).
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

namespace {

void append_line(const char* path, const std::string& line) {
  const int fd = ::open(path, O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd < 0) return;
  const std::string l = line + "\n";
  (void)!::write(fd, l.data(), l.size());  // one write: atomic for O_APPEND
  ::close(fd);
}

long long now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

int main(int argc, char** argv) {
  int sleep_ms = 0, exit_code = 0, lines = 1;
  std::string out_dir, grandchild_pid_file;
  std::vector<std::string> print_env;
  bool grandchild = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--sleep-ms") sleep_ms = std::atoi(next().c_str());
    else if (a == "--exit") exit_code = std::atoi(next().c_str());
    else if (a == "--lines") lines = std::atoi(next().c_str());
    else if (a == "--out-dir") out_dir = next();
    else if (a == "--grandchild") grandchild = true;
    else if (a == "--print-env") print_env.push_back(next());
    else if (a == "--echo") std::cout << "echo: [" << next() << "]" << std::endl;
    else if (a == "--progress") {
      // Generated text on stdout in pieces, a progress line redrawn with '\r' on stderr between them.
      std::cout << "generated: alpha " << std::flush;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      std::cerr << "\rprogress 50%" << std::flush;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      std::cout << "beta" << std::endl;
      std::cerr << "\rprogress 100%" << std::endl;
    }
    else if (a == "--print-hex") {
      // Raw bytes on stdout, in two writes cut in the middle (any bytes at all: the log must cope).
      const std::string hex = next();
      std::string bytes;
      for (std::size_t k = 0; k + 1 < hex.size(); k += 2) {
        bytes += static_cast<char>(std::strtol(hex.substr(k, 2).c_str(), nullptr, 16));
      }
      const std::size_t half = bytes.size() / 2;
      std::cout << bytes.substr(0, half) << std::flush;
      std::cout << bytes.substr(half) << std::endl;
    }
    else {
      std::cerr << "kakeya-test-job: unknown argument [" << a << "]" << std::endl;
      return 64;
    }
  }
  const long long start_ms = now_ms();
  const char* nonce = std::getenv("KAKEYA_NONCE");
  const char* runner = std::getenv("KAKEYA_RUNNER_ID");
  if (const char* ledger = std::getenv("KAKEYA_TEST_LEDGER")) {
    append_line(ledger, std::string(nonce ? nonce : "?") + " " + (runner ? runner : "?") + " " +
                            std::to_string(::getpid()));
  }
  for (const auto& name : print_env) {
    const char* v = std::getenv(name.c_str());
    std::cout << "env " << name << "=" << (v ? v : "<unset>") << std::endl;
  }
  if (grandchild && !out_dir.empty()) {
    grandchild_pid_file = out_dir + "/grandchild.pid";
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::signal(SIGTERM, SIG_IGN);
      for (;;) ::pause();
    }
    std::ofstream(grandchild_pid_file) << pid << "\n";
  }
  for (int i = 0; i < lines; ++i) std::cout << "line " << i << " of job " << (nonce ? nonce : "?") << std::endl;
  if (!out_dir.empty()) {
    std::ofstream(out_dir + "/result.json") << R"({"kind":"test-job","nonce":")" << (nonce ? nonce : "") << "\"}\n";
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(sleep_ms));
  std::cout << "done" << std::endl;
  if (const char* ledger = std::getenv("KAKEYA_TEST_LEDGER")) {
    append_line((std::string(ledger) + ".spans").c_str(),
                std::string(nonce ? nonce : "?") + " " + (runner ? runner : "?") + " " + std::to_string(start_ms) + " " +
                    std::to_string(now_ms()));
  }
  return exit_code;
}
