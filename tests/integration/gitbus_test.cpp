// The git bus against real servers on loopback: git daemon (git://), lighttpd + git http-backend
// (smart HTTP with basic auth) and OpenSSH's sshd (ssh:// with a pinned host key). Never a local
// path: local remotes do not compare-and-swap.

#include "bridge/gitbus.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <barrier>
#include <fstream>
#include <thread>

#include "tests/harness/fault_proxy.h"
#include "tests/harness/git_servers.h"
#include "tests/harness/paths.h"
#include "tests/harness/ssh_keys.h"
#include "tests/harness/ssh_server.h"

namespace kakeya::bridge {
void PrintTo(PushOutcome o, std::ostream* os) { *os << (o == PushOutcome::Won ? "Won" : "Lost"); }
namespace {

using testing::GitDaemon;
using testing::HttpGitServer;
using testing::run_git;
using testing::TempDir;

enum class ServerKind { Daemon, Http, Ssh };

constexpr const char* kUser = "kakeya-bot";
constexpr const char* kPassword = "correct-horse-battery";
const CommitAuthor kAuthor{"Kakeya Test", "test@kakeya.invalid"};

class GitBusTest : public ::testing::TestWithParam<ServerKind> {
 protected:
  void SetUp() override {
    auto oid = testing::make_bare_repo(repos_.path(), "bus.git");
    ASSERT_TRUE(oid.ok()) << oid.error().str();
    initial_ = *oid;
    if (GetParam() == ServerKind::Daemon) {
      daemon_ = GitDaemon::start(repos_.path());
      ASSERT_NE(daemon_, nullptr);
      url_ = daemon_->url("bus.git");
    } else if (GetParam() == ServerKind::Ssh) {
      ssh_ = testing::SshGitServer::start(repos_.path());
      ASSERT_NE(ssh_, nullptr);
      url_ = ssh_->url("bus.git");
      creds_ = ssh_->credentials();
    } else {
      http_ = HttpGitServer::start(repos_.path(), kUser, kPassword);
      ASSERT_NE(http_, nullptr);
      url_ = http_->url("bus.git");
      creds_.username = kUser;
      creds_.token = kPassword;
    }
  }

  GitBus open_bus(const std::string& name) {
    auto bus = GitBus::open(url_, caches_.path() / name, creds_, GitBusOptions{2, 60});
    EXPECT_TRUE(bus.ok()) << bus.error().str();
    return std::move(bus).value();
  }

  // The server's own view of a ref, read with the git CLI on the bare repository.
  std::string server_ref(const std::string& ref) {
    auto r = run_git({"-C", (repos_.path() / "bus.git").string(), "rev-parse", "--verify", "-q", ref});
    return r.ok() ? *r : std::string();
  }

  std::string commit_on(GitBus& bus, const std::optional<std::string>& parent, const std::string& file,
                        const std::string& content) {
    auto c = bus.make_commit(parent, parent, {{file, content}}, "test: " + file, kAuthor);
    EXPECT_TRUE(c.ok()) << c.error().str();
    return c.ok() ? *c : std::string();
  }

  TempDir repos_{"kakeya-repos"};
  TempDir caches_{"kakeya-caches"};
  std::unique_ptr<GitDaemon> daemon_;
  std::unique_ptr<HttpGitServer> http_;
  std::unique_ptr<testing::SshGitServer> ssh_;
  std::string url_;
  Credentials creds_;
  std::string initial_;
};

TEST_P(GitBusTest, AdvertisementLimitsAtAndOnePast) {
  GitBusOptions opts{2, 60};
  opts.max_ref_name_bytes = 40;  // small limits, same code as kMaxRefNameBytes / kMaxAdvertisedRefs
  opts.max_advertised_refs = 3;
  const std::string at = "refs/heads/x" + std::string(40 - 12, 'a');   // exactly 40 bytes
  const std::string past = "refs/heads/x" + std::string(41 - 12, 'b');  // 41 bytes
  ASSERT_EQ(at.size(), 40u);
  const std::string bare = (repos_.path() / "bus.git").string();
  for (const std::string& ref : {at, past, std::string("refs/heads/y1"), std::string("refs/heads/y2")}) {
    ASSERT_TRUE(run_git({"-C", bare, "update-ref", ref, initial_}).ok()) << ref;
  }
  auto bus = GitBus::open(url_, caches_.path() / "limits", creds_, opts);
  ASSERT_TRUE(bus.ok()) << bus.error().str();
  AdvertisementStats stats;
  auto refs = bus->ls_remote("refs/heads/", &stats);
  ASSERT_TRUE(refs.ok()) << refs.error().str();
  std::vector<std::string> names;
  for (const auto& r : *refs) names.push_back(r.name);
  // Advertisement order is by name: main, the 40-byte name (kept at the limit), y1; y2 is past
  // the count limit, the 41-byte name past the length limit.
  EXPECT_EQ(names, (std::vector<std::string>{"refs/heads/main", at, "refs/heads/y1"}));
  EXPECT_EQ(stats.advertised, 5u);
  EXPECT_EQ(stats.long_names, 1u);
  EXPECT_EQ(stats.over_count, 1u);
}

TEST_P(GitBusTest, LsRemoteAdvertisesMain) {
  GitBus bus = open_bus("a");
  auto refs = bus.ls_remote();
  ASSERT_TRUE(refs.ok()) << refs.error().str();
  ASSERT_EQ(refs->size(), 1u);
  EXPECT_EQ((*refs)[0].name, "refs/heads/main");
  EXPECT_EQ((*refs)[0].oid, initial_);
  auto none = bus.ls_remote("refs/heads/kakeya/");
  ASSERT_TRUE(none.ok()) << none.error().str();
  EXPECT_TRUE(none->empty());
}

// Refs that share a commit, and a ref whose commit the cache already holds: fetch asks once for
// the missing commit and still reports and tracks every ref.
TEST_P(GitBusTest, FetchOfRefsSharingCommitsTracksEveryRef) {
  GitBus writer = open_bus("w");
  const std::string a = commit_on(writer, std::nullopt, "a.txt", "a");
  const std::string b = commit_on(writer, std::nullopt, "b.txt", "b");
  std::vector<std::string> refs;
  for (int i = 0; i < 6; ++i) {
    refs.push_back("refs/heads/kakeya/req/shared-" + std::to_string(i));
    ASSERT_EQ(*writer.push_cas(refs.back(), i < 4 ? a : b, std::nullopt), PushOutcome::Won);
  }
  GitBus reader = open_bus("r");
  auto first = reader.fetch({refs[0], refs[1], refs[2], refs[3], "refs/heads/kakeya/req/absent"});
  ASSERT_TRUE(first.ok()) << first.error().str();
  EXPECT_EQ(first->size(), 4u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(first->at(refs[i]), a);
  auto again = reader.fetch(refs);  // a is already here; b is new
  ASSERT_TRUE(again.ok()) << again.error().str();
  ASSERT_EQ(again->size(), 6u);
  EXPECT_EQ(again->at(refs[5]), b);
  const std::string cache = (caches_.path() / "r").string();
  for (int i = 0; i < 6; ++i) {
    auto tracked = run_git({"--git-dir", cache, "rev-parse", tracking_ref(refs[i])});
    ASSERT_TRUE(tracked.ok()) << tracked.error().str();
    EXPECT_EQ(*tracked, i < 4 ? a : b);
  }
  auto content = reader.read_file(b, "b.txt");
  ASSERT_TRUE(content.ok() && content->has_value());
  EXPECT_EQ(**content, "b");
}

TEST_P(GitBusTest, NestedCommitRoundTripsThroughServer) {
  GitBus a = open_bus("a");
  auto fetched = a.fetch({"refs/heads/main"});
  ASSERT_TRUE(fetched.ok()) << fetched.error().str();
  ASSERT_EQ(fetched->at("refs/heads/main"), initial_);

  std::vector<FileChange> changes{{".kakeya/request.json", std::string("{\"schema_version\":1}\n")},
                                  {"a/b/c/deep.txt", std::string("deep\0bytes", 10)},
                                  {"a/top.txt", std::string("top")},
                                  {"README.md", std::nullopt}};
  auto c = a.make_commit(initial_, initial_, changes, "request", kAuthor);
  ASSERT_TRUE(c.ok()) << c.error().str();
  const std::string ref = "refs/heads/kakeya/req/generate-abcd1";
  auto pushed = a.push_cas(ref, *c, std::nullopt);
  ASSERT_TRUE(pushed.ok()) << pushed.error().str();
  EXPECT_EQ(*pushed, PushOutcome::Won);
  EXPECT_EQ(server_ref(ref), *c);
  auto cli = run_git({"-C", (repos_.path() / "bus.git").string(), "cat-file", "-p", *c + ":a/top.txt"});
  ASSERT_TRUE(cli.ok()) << cli.error().str();
  EXPECT_EQ(*cli, "top");

  GitBus b = open_bus("b");
  auto got = b.fetch({ref, "refs/heads/does-not-exist"});
  ASSERT_TRUE(got.ok()) << got.error().str();
  EXPECT_EQ(got->size(), 1u);
  EXPECT_EQ(got->at(ref), *c);
  auto deep = b.read_file(*c, "a/b/c/deep.txt");
  ASSERT_TRUE(deep.ok()) << deep.error().str();
  ASSERT_TRUE(deep->has_value());
  EXPECT_EQ(**deep, std::string("deep\0bytes", 10));
  auto readme = b.read_file(*c, "README.md");
  ASSERT_TRUE(readme.ok());
  EXPECT_FALSE(readme->has_value());
  auto dir_read = b.read_file(*c, "a/b");
  ASSERT_FALSE(dir_read.ok());
  EXPECT_EQ(dir_read.error().code, "bad_path");

  auto all = b.list_dir(*c, "");
  ASSERT_TRUE(all.ok()) << all.error().str();
  EXPECT_EQ(*all, (std::vector<std::string>{".kakeya/request.json", "a/b/c/deep.txt", "a/top.txt"}));
  auto sub = b.list_dir(*c, "a/b");
  ASSERT_TRUE(sub.ok());
  EXPECT_EQ(*sub, (std::vector<std::string>{"a/b/c/deep.txt"}));
  auto missing = b.list_dir(*c, "nope");
  ASSERT_TRUE(missing.ok());
  EXPECT_TRUE(missing->empty());

  // Parent and tree: a follow-up commit deleting the only file of a/b/c drops the empty subtrees.
  auto c2 = b.make_commit(*c, *c, {{"a/b/c/deep.txt", std::nullopt}}, "drop", kAuthor);
  ASSERT_TRUE(c2.ok()) << c2.error().str();
  auto after = b.list_dir(*c2, "");
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(*after, (std::vector<std::string>{".kakeya/request.json", "a/top.txt"}));
  auto parent = run_git({"-C", (repos_.path() / "bus.git").string(), "rev-parse", *c + "^"});
  ASSERT_TRUE(parent.ok());
  EXPECT_EQ(*parent, initial_);
}

TEST_P(GitBusTest, CreateOnlyPushWinsOnceThenLoses) {
  GitBus bus = open_bus("a");
  const std::string ref = "refs/heads/kakeya/req/env-probe-n0001";
  std::string c1 = commit_on(bus, std::nullopt, "one.txt", "1");
  std::string c2 = commit_on(bus, std::nullopt, "two.txt", "2");
  auto first = bus.push_cas(ref, c1, std::nullopt);
  ASSERT_TRUE(first.ok()) << first.error().str();
  EXPECT_EQ(*first, PushOutcome::Won);
  auto second = bus.push_cas(ref, c2, std::nullopt);
  ASSERT_TRUE(second.ok()) << second.error().str();
  EXPECT_EQ(*second, PushOutcome::Lost);
  EXPECT_EQ(server_ref(ref), c1);
}

TEST_P(GitBusTest, StaleExpectedOldLoses) {
  GitBus bus = open_bus("a");
  ASSERT_TRUE(bus.fetch({"refs/heads/main"}).ok());
  std::string c1 = commit_on(bus, initial_, "claim.txt", "runner-1");
  auto won = bus.push_cas("refs/heads/main", c1, initial_);
  ASSERT_TRUE(won.ok()) << won.error().str();
  EXPECT_EQ(*won, PushOutcome::Won);

  std::string c2 = commit_on(bus, initial_, "claim.txt", "runner-2");
  auto lost = bus.push_cas("refs/heads/main", c2, initial_);
  ASSERT_TRUE(lost.ok()) << lost.error().str();
  EXPECT_EQ(*lost, PushOutcome::Lost);
  EXPECT_EQ(server_ref("refs/heads/main"), c1);

  // A commit that does not descend from expected_old is refused locally: pushes are never forced.
  auto nff = bus.push_cas("refs/heads/main", c2, c1);
  ASSERT_FALSE(nff.ok());
  EXPECT_EQ(nff.error().code, "non_fast_forward");
}

// The server moves the ref after our advertisement check and before its own ref lock (a pre-receive
// hook plays the other pusher). libgit2 1.5 returns 0 from the upload; only the per-ref status
// from push_update_reference tells that the update was refused.
TEST_P(GitBusTest, ServerSideRefusalAfterAdvertisementIsLost) {
  GitBus bus = open_bus("a");
  ASSERT_TRUE(bus.fetch({"refs/heads/main"}).ok());
  std::string other = commit_on(bus, initial_, "other.txt", "the other pusher");
  ASSERT_EQ(*bus.push_cas("refs/heads/other", other, std::nullopt), PushOutcome::Won);
  const auto hook = repos_.path() / "bus.git" / "hooks" / "pre-receive";
  {
    std::ofstream h(hook);
    h << "#!/bin/sh\nexec env -u GIT_QUARANTINE_PATH git update-ref refs/heads/main " << other << " " << initial_
      << "\n";
  }
  std::filesystem::permissions(hook, std::filesystem::perms::owner_all);

  std::string mine = commit_on(bus, initial_, "mine.txt", "mine");
  auto r = bus.push_cas("refs/heads/main", mine, initial_);
  ASSERT_TRUE(r.ok()) << r.error().str();
  EXPECT_EQ(*r, PushOutcome::Lost);
  EXPECT_EQ(server_ref("refs/heads/main"), other);
}

TEST_P(GitBusTest, RacingCasUpdatesHaveExactlyOneWinner) {
  constexpr int kThreads = 4;
  std::vector<GitBus> buses;
  std::vector<std::string> commits;
  for (int i = 0; i < kThreads; ++i) {
    buses.push_back(open_bus("racer" + std::to_string(i)));
    auto f = buses.back().fetch({"refs/heads/main"});
    ASSERT_TRUE(f.ok()) << f.error().str();
    commits.push_back(commit_on(buses.back(), initial_, ".kakeya/run/status.json",
                                "{\"runner_id\":\"r" + std::to_string(i) + "\"}"));
  }
  std::barrier start(kThreads);
  std::vector<std::optional<Result<PushOutcome>>> outcomes(kThreads);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      start.arrive_and_wait();
      outcomes[i].emplace(buses[i].push_cas("refs/heads/main", commits[i], initial_));
    });
  }
  for (auto& t : threads) t.join();
  int won = 0;
  std::string winner;
  for (int i = 0; i < kThreads; ++i) {
    ASSERT_TRUE(outcomes[i]->ok()) << outcomes[i]->error().str();
    if (**outcomes[i] == PushOutcome::Won) {
      ++won;
      winner = commits[i];
    }
  }
  EXPECT_EQ(won, 1);
  EXPECT_EQ(server_ref("refs/heads/main"), winner);
}

TEST_P(GitBusTest, DeleteCasComparesOldValue) {
  GitBus bus = open_bus("a");
  const std::string ref = "refs/heads/kakeya/req/to-delete";
  std::string c = commit_on(bus, std::nullopt, "x.txt", "x");
  ASSERT_EQ(*bus.push_cas(ref, c, std::nullopt), PushOutcome::Won);

  auto wrong = bus.delete_cas(ref, initial_);
  ASSERT_TRUE(wrong.ok()) << wrong.error().str();
  EXPECT_EQ(*wrong, PushOutcome::Lost);
  EXPECT_EQ(server_ref(ref), c);

  auto right = bus.delete_cas(ref, c);
  ASSERT_TRUE(right.ok()) << right.error().str();
  EXPECT_EQ(*right, PushOutcome::Won);
  EXPECT_EQ(server_ref(ref), "");

  auto again = bus.delete_cas(ref, c);
  ASSERT_TRUE(again.ok()) << again.error().str();
  EXPECT_EQ(*again, PushOutcome::Lost);
}

// Many CAS deletes in one push: each ref is deleted only where it still holds its expected oid;
// a moved ref, an absent one and a wrong expectation are Lost and stay as they are.
TEST_P(GitBusTest, DeleteCasManyDecidesEachRefOnItsOwn) {
  GitBus bus = open_bus("a");
  std::vector<std::string> commits;
  for (int i = 0; i < 5; ++i) {
    commits.push_back(commit_on(bus, std::nullopt, "f.txt", std::to_string(i)));
    const std::string ref = "refs/heads/kakeya/req/gc-" + std::to_string(i);
    ASSERT_EQ(*bus.push_cas(ref, commits.back(), std::nullopt), PushOutcome::Won);
  }
  auto ref = [](int i) { return "refs/heads/kakeya/req/gc-" + std::to_string(i); };
  std::vector<RefExpectation> batch{{ref(0), commits[0]},
                                    {ref(1), commits[0]},  // wrong expectation
                                    {"refs/heads/kakeya/req/gc-absent", commits[2]},
                                    {ref(3), commits[3]},
                                    {ref(4), commits[4]}};
  auto out = bus.delete_cas_many(batch);
  ASSERT_TRUE(out.ok()) << out.error().str();
  EXPECT_EQ(*out, (std::vector<PushOutcome>{PushOutcome::Won, PushOutcome::Lost, PushOutcome::Lost, PushOutcome::Won,
                                            PushOutcome::Won}));
  EXPECT_EQ(server_ref(ref(0)), "");
  EXPECT_EQ(server_ref(ref(1)), commits[1]);
  EXPECT_EQ(server_ref(ref(2)), commits[2]);
  EXPECT_EQ(server_ref(ref(3)), "");
  EXPECT_EQ(server_ref(ref(4)), "");

  auto twice = bus.delete_cas_many({{ref(1), commits[1]}, {ref(1), commits[1]}});
  ASSERT_FALSE(twice.ok());
  EXPECT_EQ(twice.error().code, errc::kBadValue);
  auto empty = bus.delete_cas_many({});
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
}

TEST_P(GitBusTest, ImportObjectsFromLocalRepository) {
  TempDir local("kakeya-local");
  const std::string wt = local.path().string();
  ASSERT_TRUE(run_git({"init", "-q", "-b", "work", wt}).ok());
  std::filesystem::create_directories(local.path() / "src" / "lib");
  std::ofstream(local.path() / "src" / "lib" / "x.txt") << "first";
  ASSERT_TRUE(run_git({"-C", wt, "add", "-A"}).ok());
  ASSERT_TRUE(run_git({"-C", wt, "-c", "user.name=U", "-c", "user.email=u@x.invalid", "commit", "-q", "-m", "1"}).ok());
  std::ofstream(local.path() / "src" / "lib" / "x.txt") << "second";
  std::ofstream(local.path() / "top.txt") << "top";
  ASSERT_TRUE(run_git({"-C", wt, "add", "-A"}).ok());
  ASSERT_TRUE(run_git({"-C", wt, "-c", "user.name=U", "-c", "user.email=u@x.invalid", "commit", "-q", "-m", "2"}).ok());
  auto head = run_git({"-C", wt, "rev-parse", "HEAD"});
  ASSERT_TRUE(head.ok());

  GitBus bus = open_bus("a");
  auto before = bus.make_commit(std::nullopt, *head, {}, "x", kAuthor);
  ASSERT_FALSE(before.ok());
  EXPECT_EQ(before.error().code, "not_fetched");

  auto imported = bus.import_objects(local.path(), *head);
  ASSERT_TRUE(imported.ok()) << imported.error().str();
  auto c = bus.make_commit(std::nullopt, *head, {{".kakeya/request.json", std::string("{}")}}, "req", kAuthor);
  ASSERT_TRUE(c.ok()) << c.error().str();
  const std::string ref = "refs/heads/kakeya/req/imported";
  auto pushed = bus.push_cas(ref, *c, std::nullopt);
  ASSERT_TRUE(pushed.ok()) << pushed.error().str();
  ASSERT_EQ(*pushed, PushOutcome::Won);

  GitBus other = open_bus("b");
  ASSERT_TRUE(other.fetch({ref}).ok());
  auto x = other.read_file(*c, "src/lib/x.txt");
  ASSERT_TRUE(x.ok() && x->has_value());
  EXPECT_EQ(**x, "second");
  auto files = other.list_dir(*c, "");
  ASSERT_TRUE(files.ok());
  EXPECT_EQ(*files, (std::vector<std::string>{".kakeya/request.json", "src/lib/x.txt", "top.txt"}));
  // The history came along too: HEAD's parent is readable in the cache it was imported into.
  auto parent = run_git({"-C", wt, "rev-parse", "HEAD^"});
  ASSERT_TRUE(parent.ok());
  auto old = bus.read_file(*parent, "src/lib/x.txt");
  ASSERT_TRUE(old.ok() && old->has_value()) << (old.ok() ? "" : old.error().str());
  EXPECT_EQ(**old, "first");
}

TEST_P(GitBusTest, ServerDownIsAnErrorNotALostRace) {
  GitBus bus = open_bus("a");
  ASSERT_TRUE(bus.fetch({"refs/heads/main"}).ok());
  std::string c = commit_on(bus, initial_, "f.txt", "f");
  if (daemon_) daemon_->stop();
  if (http_) http_->stop();
  if (ssh_) ssh_->stop();
  auto down = bus.push_cas("refs/heads/main", c, initial_);
  ASSERT_FALSE(down.ok());
  EXPECT_EQ(down.error().code, "transport");
  auto ls = bus.ls_remote();
  ASSERT_FALSE(ls.ok());
  EXPECT_EQ(ls.error().code, "transport");

  Status restarted = daemon_ ? daemon_->restart() : http_ ? http_->restart() : ssh_->restart();
  ASSERT_TRUE(restarted.ok()) << restarted.error().str();
  auto up = bus.push_cas("refs/heads/main", c, initial_);
  ASSERT_TRUE(up.ok()) << up.error().str();
  EXPECT_EQ(*up, PushOutcome::Won);
}

INSTANTIATE_TEST_SUITE_P(Servers, GitBusTest,
                         ::testing::Values(ServerKind::Daemon, ServerKind::Http, ServerKind::Ssh),
                         [](const ::testing::TestParamInfo<ServerKind>& p) {
                           switch (p.param) {
                             case ServerKind::Daemon: return std::string("GitDaemon");
                             case ServerKind::Http: return std::string("SmartHttp");
                             case ServerKind::Ssh: return std::string("Ssh");
                           }
                           return std::string("Unknown");
                         });

// ---- SSH authentication and host-key pinning --------------------------------------------------

class GitBusSshAuthTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(testing::make_bare_repo(repos_.path(), "bus.git").ok());
    ssh_ = testing::SshGitServer::start(repos_.path());
    ASSERT_NE(ssh_, nullptr);
  }
  Result<std::vector<RemoteRef>> ls_with(const Credentials& creds) {
    auto bus = GitBus::open(ssh_->url("bus.git"), caches_.path() / ("c" + std::to_string(++n_)), creds,
                            GitBusOptions{2, 60});
    if (!bus.ok()) return bus.error();
    return bus->ls_remote();
  }
  TempDir repos_{"kakeya-repos"};
  TempDir caches_{"kakeya-caches"};
  std::unique_ptr<testing::SshGitServer> ssh_;
  int n_ = 0;
};

TEST_F(GitBusSshAuthTest, PinnedHostKeyAndAuthorisedKeyConnect) {
  auto ls = ls_with(ssh_->credentials());
  ASSERT_TRUE(ls.ok()) << ls.error().str();
  EXPECT_FALSE(ls->empty());
}

TEST_F(GitBusSshAuthTest, UnauthorisedKeyIsAuthFailed) {
  auto stranger = testing::make_ssh_key(caches_.path(), "stranger");
  ASSERT_TRUE(stranger.ok()) << stranger.error().str();
  Credentials bad = ssh_->credentials();
  bad.ssh_private_key = stranger->string();
  bad.ssh_public_key = stranger->string() + ".pub";
  auto ls = ls_with(bad);
  ASSERT_FALSE(ls.ok());
  EXPECT_EQ(ls.error().code, errc::kAuthFailed) << ls.error().str();

  Credentials none = ssh_->credentials();
  none.ssh_private_key.clear();
  none.ssh_public_key.clear();
  auto anonymous = ls_with(none);
  ASSERT_FALSE(anonymous.ok());
  EXPECT_EQ(anonymous.error().code, errc::kAuthFailed) << anonymous.error().str();
}

TEST_F(GitBusSshAuthTest, UnknownHostKeyIsRefusedBeforeAuthenticating) {
  Credentials c = ssh_->credentials();
  c.ssh_known_hosts = (caches_.path() / "empty_known_hosts").string();
  std::ofstream(c.ssh_known_hosts) << "# nothing pinned\n";
  auto ls = ls_with(c);
  ASSERT_FALSE(ls.ok());
  EXPECT_EQ(ls.error().code, errc::kHostKeyUnknown) << ls.error().str();
  EXPECT_NE(ls.error().message.find("[127.0.0.1]:" + std::to_string(ssh_->port())), std::string::npos)
      << ls.error().message;
  EXPECT_NE(ls.error().message.find("SHA256:"), std::string::npos) << ls.error().message;

  c.ssh_known_hosts = (caches_.path() / "missing_known_hosts").string();
  auto missing = ls_with(c);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, errc::kHostKeyUnknown) << missing.error().str();
}

TEST_F(GitBusSshAuthTest, ChangedHostKeyIsRefused) {
  // known_hosts pins another ed25519 key for [127.0.0.1]:PORT: a man in the middle, or a
  // re-keyed server.
  auto other = testing::make_ssh_key(caches_.path(), "other_host");
  ASSERT_TRUE(other.ok()) << other.error().str();
  Credentials c = ssh_->credentials();
  c.ssh_known_hosts = (caches_.path() / "changed_known_hosts").string();
  std::ofstream(c.ssh_known_hosts) << "[127.0.0.1]:" << ssh_->port() << " "
                                   << testing::first_line(other->string() + ".pub") << "\n";
  auto ls = ls_with(c);
  ASSERT_FALSE(ls.ok());
  EXPECT_EQ(ls.error().code, errc::kHostKeyMismatch) << ls.error().str();
  EXPECT_NE(ls.error().message.find("CHANGED"), std::string::npos) << ls.error().message;

  // The right key marked @revoked is refused even next to a good line.
  std::ofstream(c.ssh_known_hosts) << "[127.0.0.1]:" << ssh_->port() << " "
                                   << testing::first_line(ssh_->host_public_key()) << "\n"
                                   << "@revoked * " << testing::first_line(ssh_->host_public_key()) << "\n";
  auto revoked = ls_with(c);
  ASSERT_FALSE(revoked.ok());
  EXPECT_EQ(revoked.error().code, errc::kHostKeyMismatch) << revoked.error().str();
}

// ---- HTTP authentication ----------------------------------------------------------------------

class GitBusHttpAuthTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(testing::make_bare_repo(repos_.path(), "bus.git").ok());
    http_ = HttpGitServer::start(repos_.path(), kUser, kPassword);
    ASSERT_NE(http_, nullptr);
  }
  TempDir repos_{"kakeya-repos"};
  TempDir caches_{"kakeya-caches"};
  std::unique_ptr<HttpGitServer> http_;
};

TEST_F(GitBusHttpAuthTest, WrongPasswordIsAuthFailedWithoutLeakingIt) {
  Credentials bad{kUser, "wrong-password-XYZ"};
  auto bus = GitBus::open(http_->url("bus.git"), caches_.path() / "c", bad, GitBusOptions{2, 60});
  ASSERT_TRUE(bus.ok()) << bus.error().str();
  auto ls = bus->ls_remote();
  ASSERT_FALSE(ls.ok());
  EXPECT_EQ(ls.error().code, "auth_failed");
  EXPECT_NE(ls.error().message.find(http_->url("bus.git")), std::string::npos) << ls.error().message;
  EXPECT_EQ(ls.error().message.find("wrong-password-XYZ"), std::string::npos);

  auto c = bus->make_commit(std::nullopt, std::nullopt, {{"a", std::string("a")}}, "m", kAuthor);
  ASSERT_TRUE(c.ok());
  auto push = bus->push_cas("refs/heads/x", *c, std::nullopt);
  ASSERT_FALSE(push.ok());
  EXPECT_EQ(push.error().code, "auth_failed");
}

TEST_F(GitBusHttpAuthTest, MissingCredentialsIsAuthFailed) {
  auto bus = GitBus::open(http_->url("bus.git"), caches_.path() / "c", Credentials{}, GitBusOptions{});
  ASSERT_TRUE(bus.ok());
  auto ls = bus->ls_remote();
  ASSERT_FALSE(ls.ok());
  EXPECT_EQ(ls.error().code, "auth_failed");
}

// A batch of deletes is one push over one connection (the git daemon serves one service per TCP
// connection; the proxy counts them), however many refs it holds.
TEST(GitBusBatchTest, DeleteCasManyUsesOneConnection) {
  TempDir repos("kakeya-repos"), caches("kakeya-caches");
  auto initial = testing::make_bare_repo(repos.path(), "bus.git");
  ASSERT_TRUE(initial.ok());
  const std::string bare = (repos.path() / "bus.git").string();
  constexpr int kRefs = 200;
  std::string updates;
  std::vector<RefExpectation> batch;
  for (int i = 0; i < kRefs; ++i) {
    const std::string ref = "refs/heads/kakeya/req/bulk-" + std::to_string(i);
    updates += "create " + ref + " " + *initial + "\n";
    batch.push_back({ref, *initial});
  }
  ASSERT_TRUE(run_git({"-C", bare, "update-ref", "--stdin"}, updates).ok());
  auto daemon = GitDaemon::start(repos.path());
  ASSERT_NE(daemon, nullptr);
  auto proxy = testing::FaultProxy::start(daemon->port());
  ASSERT_NE(proxy, nullptr);
  auto bus = GitBus::open("git://127.0.0.1:" + std::to_string(proxy->port()) + "/bus.git", caches.path() / "c",
                          Credentials{});
  ASSERT_TRUE(bus.ok());
  auto out = bus->delete_cas_many(batch);
  ASSERT_TRUE(out.ok()) << out.error().str();
  EXPECT_EQ(std::count(out->begin(), out->end(), PushOutcome::Won), kRefs);
  EXPECT_EQ(proxy->accepted(), 1);
  auto left = run_git({"-C", bare, "for-each-ref", "refs/heads/kakeya/"});
  ASSERT_TRUE(left.ok());
  EXPECT_EQ(*left, "");
}

TEST(GitBusOpenTest, RejectsLocalRemotes) {
  TempDir caches("kakeya-caches");
  auto file = GitBus::open("file:///tmp/x.git", caches.path() / "c", Credentials{});
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.error().code, "bad_remote_url");
  auto path = GitBus::open("/tmp/x.git", caches.path() / "d", Credentials{});
  ASSERT_FALSE(path.ok());
  EXPECT_EQ(path.error().code, "bad_remote_url");
}

}  // namespace
}  // namespace kakeya::bridge
