// deploy/install.sh for real (issue 13): install into a DESTDIR, check owners and modes, verify the
// systemd unit with systemd-analyze, run the installed runner with the installed config as the
// runner's (simulated, account-less numeric) user against a real git daemon, re-run for
// idempotency, upgrade (the operator's config and catalog kept), uninstall and purge; the launchd
// plist too. Needs root (chown, setpriv).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <regex>
#include <sstream>

#include "runner/config.h"
#include "tests/harness/bus_world.h"

namespace kakeya::testing {
namespace {

namespace fs = std::filesystem;

constexpr const char* kUid = "4242";  // the simulated runner account (no passwd entry needed)

void spit(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary | std::ios::trunc) << text; }

struct Meta {
  unsigned mode = 0;
  uid_t uid = 0;
  gid_t gid = 0;
};
Meta meta(const fs::path& p) {
  struct stat st {};
  if (::lstat(p.c_str(), &st) != 0) return {0xFFFF, 0, 0};
  return {static_cast<unsigned>(st.st_mode & 07777), st.st_uid, st.st_gid};
}

// Every path under `root` with mode, owner, size and mtime: equal listings mean nothing changed.
std::string tree_listing(const fs::path& root) {
  std::vector<std::string> lines;
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    if (e.path().string().find("/usr/lib/systemd/") != std::string::npos) continue;
    struct stat st {};
    ::lstat(e.path().c_str(), &st);
    std::ostringstream line;
    line << e.path().string() << " " << std::oct << (st.st_mode & 07777) << std::dec << " " << st.st_uid << ":"
         << st.st_gid << " " << st.st_size << " " << st.st_mtim.tv_sec << "." << st.st_mtim.tv_nsec;
    lines.push_back(line.str());
  }
  std::sort(lines.begin(), lines.end());
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

class Installer : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "the installer test needs root (chown, setpriv)";
    fs::permissions(dest_.path(), fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                      fs::perms::others_read | fs::perms::others_exec);
  }
  CmdResult install(const std::vector<std::string>& args, const fs::path& destdir, const std::string& init = "systemd") {
    std::vector<std::string> argv{"/bin/bash", (source_dir() / "deploy" / "install.sh").string()};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.insert(argv.end(), {"--build", binary_dir().string()});
    return run_cmd(argv, {{"DESTDIR", destdir.string()}, {"KAKEYA_USER", kUid}, {"KAKEYA_GROUP", kUid},
                          {"KAKEYA_INIT", init}});
  }
  fs::path d(const std::string& path) const { return dest_.path() / path.substr(1); }

  TempDir dest_{"kakeya-destdir"};
};

TEST_F(Installer, InstallRunUpgradeUninstall) {
  auto first = install({"install"}, dest_.path());
  ASSERT_EQ(first.exit_code, 0) << first.out << first.err;

  // Owners and modes: config root:<group> 0640 in a 0750 directory; work_dir and its parts owned
  // by the runner's account; binaries 0755.
  const Meta cfg_meta = meta(d("/etc/kakeya/runner.yaml"));
  EXPECT_EQ(cfg_meta.mode, 0640u);
  EXPECT_EQ(cfg_meta.uid, 0u);
  EXPECT_EQ(cfg_meta.gid, 4242u);
  EXPECT_EQ(meta(d("/etc/kakeya")).mode, 0750u);
  EXPECT_EQ(meta(d("/etc/kakeya")).gid, 4242u);
  for (const char* dir : {"/var/lib/kakeya", "/var/lib/kakeya/jobs", "/var/lib/kakeya/spool", "/var/lib/kakeya/cache"}) {
    const Meta m = meta(d(dir));
    EXPECT_EQ(m.mode, 0750u) << dir;
    EXPECT_EQ(m.uid, 4242u) << dir;
    EXPECT_EQ(m.gid, 4242u) << dir;
  }
  for (const char* bin : {"kakeya", "kakeya-runner", "kakeya-engine"}) {
    EXPECT_EQ(meta(d("/usr/local/bin/") / bin).mode, 0755u) << bin;
  }
  EXPECT_EQ(file_text(d("/usr/local/share/kakeya/presets.yaml")), file_text(source_dir() / "manifests/presets.yaml"));

  // The unit agrees with the installed config: binary, config path, work_dir, stop timeout.
  auto cfg = runner::load_runner_config(d("/etc/kakeya/runner.yaml"));
  ASSERT_TRUE(cfg.ok()) << cfg.error().str();
  EXPECT_EQ(cfg->work_dir, "/var/lib/kakeya");
  EXPECT_EQ(cfg->catalog_path, "/usr/local/share/kakeya/presets.yaml");
  const std::string unit = file_text(d("/etc/systemd/system/kakeya-runner.service"));
  EXPECT_FALSE(std::regex_search(unit, std::regex("@[A-Z_]+@"))) << "unfilled template: " << unit;
  EXPECT_NE(unit.find("ExecStart=/usr/local/bin/kakeya-runner run --config /etc/kakeya/runner.yaml"), std::string::npos);
  EXPECT_NE(unit.find("ReadWritePaths=" + cfg->work_dir.string() + "\n"), std::string::npos);
  EXPECT_NE(unit.find("StateDirectory=kakeya\n"), std::string::npos);
  EXPECT_NE(unit.find("User=4242\n"), std::string::npos);
  EXPECT_NE(unit.find("Type=notify\n"), std::string::npos);
  EXPECT_NE(unit.find("WatchdogSec="), std::string::npos);
  EXPECT_NE(unit.find("RestartPreventExitStatus=2 64\n"), std::string::npos);
  const int stop_s = static_cast<int>(cfg->shutdown_grace_s + cfg->kill_grace_s + 60);
  EXPECT_NE(unit.find("TimeoutStopSec=" + std::to_string(stop_s) + "\n"), std::string::npos)
      << "TimeoutStopSec must be shutdown_grace_s + kill_grace_s + 60 of the installed config";

  // systemd-analyze verify against the DESTDIR (the host's own unit files copied in, so that
  // the targets the unit names resolve there; ExecStart is checked inside the root).
  fs::create_directories(d("/usr/lib/systemd"));
  ASSERT_EQ(run_cmd({"/bin/cp", "-a", "/usr/lib/systemd/system", d("/usr/lib/systemd").string()}, {}, 60).exit_code, 0);
  auto verify = run_cmd({"/usr/bin/systemd-analyze", "verify", "--root=" + dest_.path().string(),
                         "/etc/systemd/system/kakeya-runner.service"});
  EXPECT_EQ(verify.exit_code, 0) << verify.out << verify.err;
  EXPECT_EQ(verify.err.find("kakeya-runner.service"), std::string::npos) << verify.err;

  // Idempotent: a second run changes nothing.
  const std::string before = tree_listing(dest_.path());
  auto again = install({}, dest_.path());
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(again.out.find("wrote"), std::string::npos) << again.out;
  EXPECT_EQ(tree_listing(dest_.path()), before);

  // The operator edits the installed config (remote, paths inside the DESTDIR); the installed
  // runner then serves a request as the runner's account, with the installed catalog and engine.
  BusWorld world(Transport::GitDaemon);
  std::string yaml = file_text(d("/etc/kakeya/runner.yaml"));
  yaml = std::regex_replace(yaml, std::regex("\nremote_url: [^\n]*"), "\nremote_url: " + world.remote());
  yaml = std::regex_replace(yaml, std::regex("\ncredentials_file: [^\n]*"), "");
  yaml = std::regex_replace(yaml, std::regex("\nwork_dir: [^\n]*"), "\nwork_dir: " + d("/var/lib/kakeya").string());
  yaml = std::regex_replace(yaml, std::regex("\ncatalog_path: [^\n]*"),
                            "\ncatalog_path: " + d("/usr/local/share/kakeya/presets.yaml").string());
  yaml = std::regex_replace(yaml, std::regex("\ntool_dirs:\n(  - [^\n]*\n)+"),
                            "\ntool_dirs: [" + d("/usr/local/bin").string() + "]\n");
  yaml = std::regex_replace(yaml, std::regex("\npoll_interval_s: [^\n]*"), "\npoll_interval_s: 0.2");
  spit(d("/etc/kakeya/runner.yaml"), yaml);
  const std::string branch = world.request({"env-probe"});
  const std::string runner = d("/usr/local/bin/kakeya-runner").string();
  const std::map<std::string, std::string> env{{"HOME", d("/var/lib/kakeya").string()}};
  auto served = run_cmd({"/usr/bin/setpriv", std::string("--reuid=") + kUid, std::string("--regid=") + kUid,
                         "--clear-groups", runner, "once", "--config", d("/etc/kakeya/runner.yaml").string(),
                         "--log-format", "text", "--max-seconds", "120"},
                        env);
  EXPECT_EQ(served.exit_code, 0) << served.err;
  EXPECT_EQ(world.state(branch), "succeeded") << served.err;
  EXPECT_TRUE(fs::exists(d("/var/lib/kakeya/state.json")));
  EXPECT_EQ(meta(d("/var/lib/kakeya/state.json")).uid, 4242u);
  // Another account cannot read the config: a config error (exit 2), not a crash.
  auto stranger = run_cmd({"/usr/bin/setpriv", "--reuid=4343", "--regid=4343", "--clear-groups", runner, "once",
                           "--config", d("/etc/kakeya/runner.yaml").string()},
                          env);
  EXPECT_EQ(stranger.exit_code, 2) << stranger.err;

  // Upgrade: the edited config stays; a catalog still as shipped is replaced by the new one.
  spit(d("/usr/local/share/kakeya/presets.yaml"), "# the catalog of an older release\n");
  spit(d("/usr/local/share/kakeya/presets.yaml.dist"), "# the catalog of an older release\n");
  auto upgrade = install({"upgrade"}, dest_.path());
  ASSERT_EQ(upgrade.exit_code, 0) << upgrade.err;
  EXPECT_EQ(file_text(d("/etc/kakeya/runner.yaml")), yaml);
  EXPECT_EQ(file_text(d("/usr/local/share/kakeya/presets.yaml")), file_text(source_dir() / "manifests/presets.yaml"));
  // ... and an operator's edit of the catalog is kept, with a notice.
  const std::string edited = file_text(d("/usr/local/share/kakeya/presets.yaml")) + "# operator's note\n";
  spit(d("/usr/local/share/kakeya/presets.yaml"), edited);
  auto upgrade2 = install({"upgrade"}, dest_.path());
  ASSERT_EQ(upgrade2.exit_code, 0) << upgrade2.err;
  EXPECT_EQ(file_text(d("/usr/local/share/kakeya/presets.yaml")), edited);
  EXPECT_NE(upgrade2.out.find("kept the edited catalog"), std::string::npos) << upgrade2.out;
  EXPECT_EQ(meta(d("/etc/kakeya/runner.yaml")).mode, 0640u);

  // Uninstall keeps the operator's data; --purge removes it.
  auto removed = install({"uninstall"}, dest_.path());
  ASSERT_EQ(removed.exit_code, 0) << removed.err;
  EXPECT_FALSE(fs::exists(d("/usr/local/bin/kakeya-runner")));
  EXPECT_FALSE(fs::exists(d("/etc/systemd/system/kakeya-runner.service")));
  EXPECT_EQ(file_text(d("/etc/kakeya/runner.yaml")), yaml);
  EXPECT_EQ(file_text(d("/usr/local/share/kakeya/presets.yaml")), edited);
  EXPECT_TRUE(fs::exists(d("/var/lib/kakeya/state.json")));
  auto purged = install({"uninstall", "--purge"}, dest_.path());
  ASSERT_EQ(purged.exit_code, 0) << purged.err;
  EXPECT_FALSE(fs::exists(d("/etc/kakeya")));
  EXPECT_FALSE(fs::exists(d("/var/lib/kakeya")));
  EXPECT_FALSE(fs::exists(d("/usr/local/share/kakeya")));
}

TEST_F(Installer, LaunchdPlistIsInstalledWithThePaths) {
  auto r = install({}, dest_.path(), "launchd");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const fs::path plist = d("/Library/LaunchDaemons/com.kakeya.runner.plist");
  ASSERT_TRUE(fs::exists(plist));
  const std::string text = file_text(plist);
  EXPECT_FALSE(std::regex_search(text, std::regex("@[A-Z_]+@"))) << text;
  EXPECT_NE(text.find("<string>/usr/local/bin/kakeya-runner</string>"), std::string::npos) << text;
  EXPECT_NE(text.find("<string>/etc/kakeya/runner.yaml</string>"), std::string::npos) << text;
  auto lint = run_cmd({"/usr/bin/python3", "-c", "import plistlib,sys; plistlib.load(open(sys.argv[1],'rb'))",
                       plist.string()});
  EXPECT_EQ(lint.exit_code, 0) << lint.err;
  EXPECT_FALSE(fs::exists(d("/etc/systemd/system/kakeya-runner.service")));
  auto bad = install({"bogus"}, dest_.path());
  EXPECT_EQ(bad.exit_code, 64);
}

}  // namespace
}  // namespace kakeya::testing
