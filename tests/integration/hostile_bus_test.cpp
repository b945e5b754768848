// No push can stop a runner (issue 10). An attacker with push access builds request branches by
// hand with plain git (hash-object, mktree — which writes any mode —, commit-tree, push; never
// through `kakeya`): every tree shape, invalid UTF-8 in every string field and in branch names,
// NUL bytes, surrogates, overlong encodings, oversized and deeply nested JSON, forged status and
// cancel files. They are pushed in three batches, interleaved with valid requests, to a real git
// daemon on loopback served by one real kakeya-runner. Then:
//  - every malformed branch ends `rejected` with a reason naming the field, path or value;
//  - every valid request ends as it should (succeeded, or cancelled for the one with cancel.json);
//  - the runner is alive, and alive after a restart over the same branches, which it leaves as
//    they are;
//  - each branch's history holds exactly one commit with a terminal status;
//  - every file a runner commit wrote, and the runner's own log, is well-formed UTF-8.
#include <git2.h>
#include <signal.h>

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "bridge/limits.h"
#include "bridge/run_state.h"
#include "bridge/utf8.h"
#include "tests/harness/bus_world.h"
#include "tests/integration/fleet_util.h"

namespace kakeya::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Objects and pushes with plain git in a scratch bare repository.
class Forge {
 public:
  Forge(const fs::path& dir, std::string remote) : repo_((dir / "forge.git").string()), remote_(std::move(remote)) {
    auto r = run_git({"init", "-q", "--bare", repo_});
    EXPECT_TRUE(r.ok()) << r.error().str();
  }

  std::string blob(const std::string& content) {
    return git_ok(run_git({"-C", repo_, "hash-object", "-w", "--stdin"}, content));
  }

  struct Entry {
    std::string mode, oid, name;
  };
  // `git mktree --missing`: entries as given (any mode, repeated names), gitlinks need no object.
  std::string tree(const std::vector<Entry>& entries) {
    std::string in;
    for (const auto& e : entries) {
      const std::string type = e.mode == "40000" ? "tree" : e.mode == "160000" ? "commit" : "blob";
      in += e.mode + " " + type + " " + e.oid + "\t" + e.name + "\n";
    }
    return git_ok(run_git({"-C", repo_, "mktree", "--missing"}, in));
  }

  std::string commit(const std::string& tree, const std::string& message) {
    return git_ok(run_git({"-C", repo_, "-c", "user.name=Mallory", "-c", "user.email=mallory@example.com",
                           "commit-tree", tree, "-m", message}));
  }

  // Queues `branch` (short name, any bytes) to point at `commit` on the next push().
  void add(const std::string& branch, const std::string& commit) { pending_.push_back(commit + ":refs/heads/" + branch); }

  void push() {
    std::vector<std::string> args{"-C", repo_, "push", "-q", remote_};
    args.insert(args.end(), pending_.begin(), pending_.end());
    git_ok(run_git(args));
    pending_.clear();
  }

 private:
  static std::string git_ok(const Result<std::string>& r) {
    EXPECT_TRUE(r.ok()) << r.error().str();
    return r.ok() ? r.value() : std::string();
  }
  std::string repo_, remote_;
  std::vector<std::string> pending_;
};

const std::string kCreated = "2024-05-01T12:00:00Z";
const std::string kGitlink = "1111111111111111111111111111111111111111";

// request.json text for test-job (fields in the client's order), before any tampering.
std::string request_text(const std::string& nonce, const std::string& preset = "test-job",
                         const std::string& params = R"({"message": "hi"})") {
  return "{\"schema_version\": 1, \"preset\": \"" + preset + "\", \"params\": " + params + ", \"nonce\": \"" + nonce +
         "\", \"requested_by\": \"mallory\", \"created_at\": \"" + kCreated +
         "\", \"client\": {\"name\": \"kakeya\", \"version\": \"0.1.0\"}}";
}

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return at == std::string::npos ? text : text.replace(at, from.size(), to);
}

struct Expect {
  std::string branch;
  std::string state;   // terminal state expected
  std::string needle;  // must occur in the reason ("" = not checked)
};

class HostileBus : public ::testing::Test {
 public:  // the case builders below are free functions
  HostileBus() : world_(Transport::GitDaemon), forge_(world_.dir(), world_.remote()) {
    readme_ = forge_.blob("workload\n");
  }

  // A commit whose root holds README.md, `.kakeya` (a tree of `kakeya` entries, unless
  // `kakeya_entry` replaces that entry) and `extra_root` entries.
  std::string commit_of(const std::vector<Forge::Entry>& kakeya, std::optional<Forge::Entry> kakeya_entry = {}) {
    std::vector<Forge::Entry> root{{"100644", readme_, "README.md"}};
    root.push_back(kakeya_entry ? *kakeya_entry : Forge::Entry{"40000", forge_.tree(kakeya), ".kakeya"});
    return forge_.commit(forge_.tree(root), "hand-made request");
  }
  Forge::Entry request_entry(const std::string& text, const std::string& mode = "100644") {
    return {mode, forge_.blob(text), "request.json"};
  }
  Forge::Entry run_entry(const std::vector<Forge::Entry>& run) { return {"40000", forge_.tree(run), "run"}; }

  // A branch kakeya/req/test-job-<nonce> whose request.json is `text`, expected to end in `state`.
  void request(const std::string& nonce, const std::string& text, const std::string& state, const std::string& needle,
               const std::vector<Forge::Entry>& run = {}, const std::string& mode = "100644") {
    std::vector<Forge::Entry> kakeya{request_entry(text, mode)};
    if (!run.empty()) kakeya.push_back(run_entry(run));
    branch("kakeya/req/test-job-" + nonce, commit_of(kakeya), state, needle);
  }
  void branch(const std::string& name, const std::string& commit, const std::string& state, const std::string& needle) {
    forge_.add(name, commit);
    expect_.push_back({name, state, needle});
  }
  void reject(const std::string& nonce, const std::string& text, const std::string& needle,
              const std::vector<Forge::Entry>& run = {}) {
    request(nonce, text, "rejected", needle, run);
  }

  BusWorld world_;
  Forge forge_;
  std::string readme_;
  std::vector<Expect> expect_;
};

// --- the malformed branches, by class --------------------------------------------------------

void tree_shapes(HostileBus& t, Forge& f) {
  const std::string valid = request_text("t00-placeholder");
  const std::string sub = f.tree({{"100644", f.blob(valid), "x"}});
  auto shape = [&](const std::string& nonce, const Forge::Entry& e, const std::string& needle) {
    t.branch("kakeya/req/test-job-" + nonce, t.commit_of({e}), "rejected", needle);
  };
  // request.json that is not a regular file: never run, even when its bytes are a valid manifest.
  shape("t01-dir", {"40000", sub, "request.json"}, "'.kakeya/request.json' in commit");
  shape("t02-gitlink", {"160000", kGitlink, "request.json"}, "a submodule (gitlink, mode 160000)");
  shape("t03-symlink", {"120000", f.blob(request_text("t03-symlink")), "request.json"}, "a symlink (mode 120000)");
  shape("t04-mode664", {"100664", f.blob(request_text("t04-mode664")), "request.json"}, "non-standard mode 100664");
  shape("t05-mode600", {"100600", f.blob(request_text("t05-mode600")), "request.json"}, "non-standard mode 100600");
  shape("t06-mode0", {"100000", f.blob(request_text("t06-mode0")), "request.json"}, "non-standard mode 100000");
  // .kakeya itself not a directory.
  const std::string req = f.blob(request_text("t07-kfile"));
  t.branch("kakeya/req/test-job-t07-kfile", t.commit_of({}, Forge::Entry{"100644", req, ".kakeya"}), "rejected",
           "'.kakeya' in commit");
  t.branch("kakeya/req/test-job-t08-klink", t.commit_of({}, Forge::Entry{"120000", f.blob(".git"), ".kakeya"}),
           "rejected", "'.kakeya' in commit");
  t.branch("kakeya/req/test-job-t09-ksub", t.commit_of({}, Forge::Entry{"160000", kGitlink, ".kakeya"}), "rejected",
           "a submodule");
  // No request at all, and a name repeated in the tree.
  t.branch("kakeya/req/test-job-t10-none", t.commit_of({{"100644", f.blob("{}"), "other.json"}}), "rejected",
           "no .kakeya/request.json");
  const std::string a = f.blob(request_text("t11-dup")), b = f.blob(request_text("t11-dup", "env-probe", "{}"));
  t.branch("kakeya/req/test-job-t11-dup",
           t.commit_of({{"100644", a, "request.json"}, {"100644", b, "request.json"}}), "rejected", "more than once");
  // Size: one byte past the limit (a valid manifest padded with spaces).
  const std::string big = request_text("t12-big");
  shape("t12-big", {"100644", f.blob(big + std::string(bridge::kMaxRequestBytes + 1 - big.size(), ' ')), "request.json"},
        "more than the limit of " + std::to_string(bridge::kMaxRequestBytes));
  // status.json and cancel.json in every shape (on an otherwise valid request).
  auto run_shape = [&](const std::string& nonce, const Forge::Entry& e, const std::string& needle) {
    t.request(nonce, request_text(nonce), "rejected", needle, {e});
  };
  run_shape("s01-dir", {"40000", sub, "status.json"}, "'.kakeya/run/status.json'");
  run_shape("s02-link", {"120000", f.blob(R"({"state": "succeeded", "reason": "forged"})"), "status.json"},
            "'.kakeya/run/status.json' in commit");
  run_shape("s03-gitlink", {"160000", kGitlink, "status.json"}, "'.kakeya/run/status.json' in commit");
  run_shape("s04-big",
            {"100644", f.blob(R"({"state": "running"})" + std::string(bridge::kMaxStatusBytes, ' ')), "status.json"},
            "more than the limit of " + std::to_string(bridge::kMaxStatusBytes));
  run_shape("s05-json", {"100644", f.blob("{\"state\": "), "status.json"}, "invalid .kakeya/run/status.json");
  run_shape("s06-utf8", {"100644", f.blob("{\"state\": \"running\", \"reason\": \"\xff\xfe\"}"), "status.json"},
            "invalid .kakeya/run/status.json");
  run_shape("s07-state", {"100644", f.blob(R"({"state": "victorious"})"), "status.json"}, "unknown state");
  run_shape("s08-deep",
            {"100644", f.blob("{\"state\": \"running\", \"progress\": " + std::string(5000, '[') + std::string(5000, ']') + "}"),
             "status.json"},
            "nested deeper");
  run_shape("s09-gen", {"100644", f.blob(R"({"state": "running", "claim_gen": "x"})"), "status.json"}, "claim_gen");
  run_shape("c01-dir", {"40000", sub, "cancel.json"}, "'.kakeya/run/cancel.json'");
  run_shape("c02-link", {"120000", f.blob("x"), "cancel.json"}, "'.kakeya/run/cancel.json' in commit");
  run_shape("c03-gitlink", {"160000", kGitlink, "cancel.json"}, "'.kakeya/run/cancel.json' in commit");
  run_shape("c04-big", {"100644", f.blob(std::string(bridge::kMaxCancelBytes + 1, ' ')), "cancel.json"},
            "more than the limit of " + std::to_string(bridge::kMaxCancelBytes));
  run_shape("c05-json", {"100644", f.blob("cancel please"), "cancel.json"}, "invalid .kakeya/run/cancel.json");
  run_shape("c06-utf8",
            {"100644", f.blob("{\"requested_by\": \"\xc0\xaf\", \"created_at\": \"" + kCreated + "\", \"reason\": \"\"}"),
             "cancel.json"},
            "invalid .kakeya/run/cancel.json");
  // .kakeya/run as a file.
  t.branch("kakeya/req/test-job-s10-runfile",
           t.commit_of({t.request_entry(request_text("s10-runfile")), {"100644", f.blob("{}"), "run"}}), "rejected",
           "'.kakeya/run'");
}

// A 64-byte nonce (the longest allowed) starting with `tag`.
std::string long_nonce(const std::string& tag) { return tag + std::string(64 - tag.size(), 'x'); }

// kakeya/req/<a*100>/<b*k>/test-job-<nonce>, `size` bytes long; segments, namespace (<= 200
// bytes) and nonce stay within their own rules, so only the length can be wrong.
std::string long_branch(const std::string& nonce, std::size_t size) {
  const std::string head = "kakeya/req/" + std::string(100, 'a') + "/";
  const std::string tail = "/test-job-" + nonce;
  return head + std::string(size - head.size() - tail.size(), 'b') + tail;
}

void content_classes(HostileBus& t) {
  // Ill-formed UTF-8 in every string field (raw bytes in the file).
  const std::vector<std::pair<std::string, std::string>> fields = {
      {"\"test-job\"", "preset"},        {"\"hi\"", "params.message"},     {"\"mallory\"", "requested_by"},
      {"\"" + kCreated + "\"", "created_at"}, {"\"kakeya\"", "client.name"}, {"\"0.1.0\"", "client.version"},
      {"\"message\"", "params"}};
  int i = 0;
  for (const auto& [value, field] : fields) {
    const std::string nonce = "u" + std::to_string(10 + i++) + "-ff";
    t.reject(nonce, replaced(request_text(nonce), value, "\"x\xff\xfey\""), "`" + field);
  }
  t.reject("u20-nonce", replaced(request_text("u20-nonce"), "\"u20-nonce\"", "\"u20\xffnonce\""), "`nonce");
  // Overlong encoding, encoded surrogate, truncated sequence, stray continuation byte.
  t.reject("u21-overlong", replaced(request_text("u21-overlong"), "\"mallory\"", "\"mal\xc0\xafory\""), "`requested_by");
  t.reject("u22-surrogate", replaced(request_text("u22-surrogate"), "\"kakeya\"", "\"ka\xed\xa0\x80keya\""), "`client.name");
  t.reject("u23-truncated", replaced(request_text("u23-truncated"), "\"0.1.0\"", "\"0.1.0\xe2\x82\""), "`client.version");
  t.reject("u24-stray", replaced(request_text("u24-stray"), "\"hi\"", "\"h\x80i\""), "`params.message");
  // Escaped lone surrogate, NUL bytes raw and escaped, control characters.
  t.reject("u25-lone", replaced(request_text("u25-lone"), "\"mallory\"", R"("a\udc00b")"), "`requested_by");
  t.reject("u26-nul", replaced(request_text("u26-nul"), "\"mallory\"", std::string("\"a\0b\"", 5)), "`requested_by");
  t.reject("u27-nulesc", replaced(request_text("u27-nulesc"), "\"mallory\"", R"("a\u0000b")"), "control character");
  t.reject("u28-ctl", replaced(request_text("u28-ctl"), "\"hi\"", R"("a\tb")"), "params.message");
  t.reject("u29-esc", replaced(request_text("u29-esc"), "\"mallory\"", R"("\u001b[2Jowned")"), "requested_by");
  // Nesting, duplicate, unknown and missing keys, types, trailing bytes, empty, null.
  t.reject("j01-deep",
           replaced(request_text("j01-deep"), "\"hi\"", std::string(10000, '[') + std::string(10000, ']')),
           "params.message");
  t.reject("j02-dup", replaced(request_text("j02-dup"), "{\"schema_version\": 1,", "{\"preset\": \"x\", \"schema_version\": 1,"),
           "duplicate key `preset`");
  t.reject("j03-unknown", replaced(request_text("j03-unknown"), "{\"schema_version\"", "{\"extra\": 1, \"schema_version\""),
           "unknown key `extra`");
  t.reject("j04-type", replaced(request_text("j04-type"), "\"schema_version\": 1", "\"schema_version\": \"1\""),
           "schema_version");
  t.reject("j05-trailing", request_text("j05-trailing") + " {}", ".kakeya/request.json");
  t.reject("j06-empty", "", ".kakeya/request.json");
  t.reject("j07-null", "null", "<root>");
  t.reject("j08-missing", replaced(request_text("j08-missing"), ", \"nonce\": \"j08-missing\"", ""), "missing key `nonce`");
  t.reject("j09-nonce", replaced(request_text("j09-nonce"), "\"nonce\": \"j09-nonce\"", "\"nonce\": \"AB\""), "nonce");
  t.reject("j10-time", replaced(request_text("j10-time"), kCreated, "yesterday"), "created_at");
  t.reject("j11-ptype", request_text("j11-ptype", "test-job", R"({"message": 5})"), "params.message");
  t.reject("j12-pname", request_text("j12-pname", "test-job", R"({"bogus": 1})"), "bogus");
  t.reject("j13-long", replaced(request_text("j13-long"), "\"mallory\"", "\"" + std::string(257, 'm') + "\""),
           "requested_by");
  t.reject("j14-client", replaced(request_text("j14-client"), "\"version\": \"0.1.0\"", "\"version\": \"0.1.0\", \"extra\": 1"),
           "client.extra");
  t.reject("j15-schema", replaced(request_text("j15-schema"), "\"schema_version\": 1", "\"schema_version\": 2"),
           "schema_version");
  t.reject("j16-params", request_text("j16-params", "test-job", "[1, 2]"), "params");
  t.reject("j17-float", replaced(request_text("j17-float"), "\"schema_version\": 1", "\"schema_version\": 1.0"),
           "schema_version");
  t.reject("j18-huge-num", request_text("j18-huge-num", "test-job", R"({"sleep_ms": 1e400})"), "sleep_ms");
  // Presets and branch names.
  t.branch("kakeya/req/no-such-preset-p01-unknown",
           t.commit_of({t.request_entry(request_text("p01-unknown", "no-such-preset", "{}"))}), "rejected",
           "'no-such-preset'");
  t.branch("kakeya/req/test-job-p02-mismatch", t.commit_of({t.request_entry(request_text("p02-other"))}), "rejected",
           "p02-other");
  t.branch("kakeya/req/\xff\xfe/test-job-p03-ff", t.commit_of({t.request_entry(request_text("p03-ff"))}), "rejected",
           "kakeya/req/\\xff\\xfe/test-job-p03-ff");
  t.branch("kakeya/req/\xed\xa0\x80/test-job-p04-sur", t.commit_of({t.request_entry(request_text("p04-sur"))}),
           "rejected", "\\xed\\xa0\\x80");
  t.branch(long_branch(long_nonce("p05-long"), bridge::kMaxBranchNameBytes + 1),
           t.commit_of({t.request_entry(request_text(long_nonce("p05-long")))}), "rejected",
           "256 bytes, more than the limit of " + std::to_string(bridge::kMaxBranchNameBytes));
  t.branch("kakeya/req/test-job-p06-\xc3\xa9t\xc3\xa9", t.commit_of({t.request_entry(request_text("p06-x"))}),
           "rejected", "test-job-p06-\xc3\xa9t\xc3\xa9");
}

// Valid requests (and one valid cancel), in two parts pushed with different batches.
void valid_requests(HostileBus& t, Forge& f, int part) {
  if (part == 1) {
    t.request("v01-plain", request_text("v01-plain"), "succeeded", "");
    t.request("v02-dash", request_text("v02-dash", "test-job", R"({"message": "--help -n -e"})"), "succeeded", "");
    t.request("v03-exec", request_text("v03-exec"), "succeeded", "", {}, "100755");
    return;
  }
  const std::string at_limit = request_text("v04-limit");
  t.request("v04-limit", at_limit + std::string(bridge::kMaxRequestBytes - at_limit.size(), '\n'), "succeeded", "");
  // Job output that is not UTF-8 (invalid bytes, a character cut between two writes).
  t.branch("kakeya/req/test-bytes-v05-bytes",
           t.commit_of({t.request_entry(request_text("v05-bytes", "test-bytes", R"({"hex": "c0af41ff42eda08043e282ac"})"))}),
           "succeeded", "");
  // A branch name of exactly the limit.
  const std::string at_limit_name = long_branch(long_nonce("v07-limit"), bridge::kMaxBranchNameBytes);
  EXPECT_EQ(at_limit_name.size(), bridge::kMaxBranchNameBytes);
  t.branch(at_limit_name, t.commit_of({t.request_entry(request_text(long_nonce("v07-limit")))}), "succeeded", "");
  const std::string cancel = R"({"requested_by": "alice", "created_at": ")" + kCreated + R"(", "reason": "changed my mind"})";
  t.request("v06-cancel", request_text("v06-cancel"), "cancelled", "changed my mind",
            {{"100644", f.blob(cancel), "cancel.json"}});
}

// Every commit of `ref`'s first-parent history in the cache at `cache`: status.json states that are
// terminal, and whether every file a runner commit wrote is well-formed UTF-8.
struct History {
  int terminal_commits = 0;
  std::vector<std::string> ill_formed;  // "<commit> <path>"
};

std::optional<std::string> blob_at(git_repository* repo, git_tree* tree, const std::string& path) {
  git_tree_entry* e = nullptr;
  if (git_tree_entry_bypath(&e, tree, path.c_str()) != 0) return std::nullopt;
  std::optional<std::string> out;
  if (git_tree_entry_filemode(e) == GIT_FILEMODE_BLOB) {
    git_blob* b = nullptr;
    if (git_blob_lookup(&b, repo, git_tree_entry_id(e)) == 0) {
      out = std::string(static_cast<const char*>(git_blob_rawcontent(b)), static_cast<std::size_t>(git_blob_rawsize(b)));
      git_blob_free(b);
    }
  }
  git_tree_entry_free(e);
  return out;
}

History walk_history(const fs::path& cache, const std::string& tip_hex) {
  History h;
  git_repository* repo = nullptr;
  if (git_repository_open_bare(&repo, cache.c_str()) != 0) {
    ADD_FAILURE() << "cannot open " << cache;
    return h;
  }
  git_oid id;
  git_oid_fromstr(&id, tip_hex.c_str());
  for (int depth = 0; depth < 100; ++depth) {
    git_commit* c = nullptr;
    if (git_commit_lookup(&c, repo, &id) != 0) break;
    git_tree* tree = nullptr;
    if (git_commit_tree(&tree, c) == 0) {
      if (auto st = blob_at(repo, tree, ".kakeya/run/status.json")) {
        auto parsed = bridge::parse_status(*st);
        if (parsed.ok() && bridge::is_terminal(parsed->state)) ++h.terminal_commits;
      }
      if (std::string(git_commit_message(c)).find("[skip ci]") != std::string::npos) {
        for (const char* p : {".kakeya/run/status.json", ".kakeya/run/summary.json", ".kakeya/run/gate.json",
                              ".kakeya/run/logs/job.log"}) {
          auto b = blob_at(repo, tree, p);
          if (b && !bridge::is_valid_utf8(*b)) h.ill_formed.push_back(git_oid_tostr_s(&id) + std::string(" ") + p);
        }
      }
      git_tree_free(tree);
    }
    const bool has_parent = git_commit_parentcount(c) > 0;
    if (has_parent) id = *git_commit_parent_id(c, 0);
    git_commit_free(c);
    if (!has_parent) break;
  }
  git_repository_free(repo);
  return h;
}

std::map<std::string, std::string> request_tips(BusWorld& w) {
  std::map<std::string, std::string> out;
  auto refs = w.bus().ls_remote("refs/heads/kakeya/req/");
  EXPECT_TRUE(refs.ok()) << refs.error().str();
  if (refs.ok()) {
    for (const auto& r : *refs) out[r.name] = r.oid;
  }
  return out;
}

TEST_F(HostileBus, MalformedBranchesAreRejectedAndNeverStopTheRunner) {
  git_libgit2_init();
  auto runner = world_.start_runner("r1", {{"max_jobs", "2"}});

  // Three batches pushed while the runner serves: tree shapes with some valid requests, then
  // content classes, then more valid requests.
  tree_shapes(*this, forge_);
  valid_requests(*this, forge_, 1);
  forge_.push();
  content_classes(*this);
  forge_.push();
  valid_requests(*this, forge_, 2);
  forge_.push();

  std::vector<std::string> branches;
  int malformed = 0;
  for (const auto& e : expect_) {
    branches.push_back(e.branch);
    malformed += e.state == "rejected" ? 1 : 0;
  }
  ASSERT_GE(malformed, 60);

  const auto done = world_.wait_terminal(branches, 240);
  for (const auto& e : expect_) {
    const json& st = done.at(e.branch);
    const std::string shown = bridge::printable(e.branch);
    ASSERT_TRUE(st.is_object()) << shown << " never reached a terminal state";
    EXPECT_EQ(st.value("state", ""), e.state) << shown << ": " << st.dump();
    const std::string reason = st.value("reason", "");
    EXPECT_TRUE(bridge::is_valid_utf8(reason)) << shown;
    if (!e.needle.empty()) {
      EXPECT_NE(reason.find(e.needle), std::string::npos)
          << shown << ": reason does not name \"" << bridge::printable(e.needle) << "\": " << reason;
    }
  }
  EXPECT_TRUE(fleet::alive(runner->pid())) << "runner died:\n" << runner->log();
  // Only the valid test-job requests ran (the symlinked request.json, a valid manifest, did not).
  std::multiset<std::string> ran;
  for (const auto& n : world_.ledger_nonces()) ran.insert(n);
  EXPECT_EQ(ran, (std::multiset<std::string>{"v01-plain", "v02-dash", "v03-exec", "v04-limit", long_nonce("v07-limit")}));

  // The client lists the same branches: its output is well-formed too, names escaped.
  const CmdResult list = world_.kakeya({"list"});
  EXPECT_EQ(list.exit_code, 0) << list.err;
  EXPECT_TRUE(bridge::is_valid_utf8(list.out + list.err));
  EXPECT_NE(list.out.find("kakeya/req/\\xff\\xfe/test-job-p03-ff"), std::string::npos) << list.out;
  const CmdResult list_json = world_.kakeya({"list", "--json"});
  EXPECT_EQ(list_json.exit_code, 0) << list_json.err;
  EXPECT_TRUE(bridge::is_valid_utf8(list_json.out));
  const json listed = json::parse(list_json.out, nullptr, false);
  ASSERT_TRUE(listed.is_array()) << list_json.out;
  EXPECT_GE(listed.size(), expect_.size());

  // Restart over the same branches: the new process leaves every finished branch alone.
  const auto before = request_tips(world_);
  runner->signal(SIGTERM);
  runner->wait();
  auto again = world_.start_runner("r1", {{"max_jobs", "2"}});
  std::this_thread::sleep_for(std::chrono::seconds(4));  // about 20 polls
  EXPECT_TRUE(fleet::alive(again->pid())) << "restarted runner died:\n" << again->log();
  EXPECT_EQ(request_tips(world_), before) << "the restarted runner wrote to finished branches";

  // History: one terminal status per branch; every runner-written file well-formed.
  std::vector<std::string> refs;
  for (const auto& [ref, oid] : before) refs.push_back(ref);
  auto fetched = world_.bus().fetch(refs);
  ASSERT_TRUE(fetched.ok()) << fetched.error().str();
  for (const auto& [ref, oid] : *fetched) {
    const History h = walk_history(world_.dir() / "inspect-cache", oid);
    EXPECT_EQ(h.terminal_commits, 1) << bridge::printable(ref);
    EXPECT_TRUE(h.ill_formed.empty()) << bridge::printable(ref) << ": " << h.ill_formed.front();
  }
  again->signal(SIGTERM);
  again->wait();
  for (const char* log : {"runner-r1.log"}) {
    const std::string text = file_text(world_.dir() / log);
    EXPECT_TRUE(bridge::is_valid_utf8(text)) << log;
    EXPECT_NE(text.find("\\xff\\xfe"), std::string::npos) << "the \\xff\\xfe branch is not logged escaped";
  }
  git_libgit2_shutdown();
}

int count_lines_with(const std::string& text, const std::string& needle) {
  int n = 0;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) n += line.find(needle) != std::string::npos ? 1 : 0;
  return n;
}

TEST_F(HostileBus, AReceiptThatCannotBePushedIsRetriedWithBackOffNotReRead) {
  // The server refuses every update of an existing branch (a pre-receive hook): the branch can be
  // created, but the runner's rejection receipt cannot be pushed.
  const fs::path hook = world_.dir() / "srv" / "bus.git" / "hooks" / "pre-receive";
  std::ofstream(hook) << "#!/bin/sh\n"
                         "while read old new ref; do\n"
                         "  [ \"$old\" = 0000000000000000000000000000000000000000 ] || { echo refused >&2; exit 1; }\n"
                         "done\n";
  fs::permissions(hook, fs::perms::owner_all);
  auto runner = world_.start_runner("r1");
  const std::string branch = "kakeya/req/test-job-b01-blocked";
  forge_.add(branch, commit_of({request_entry(request_text("b01-blocked"), "120000")}));
  forge_.push();

  std::this_thread::sleep_for(std::chrono::milliseconds(5500));  // ~27 polls at 0.2 s
  const std::string log = runner->log();
  // Read and judged once; the receipt retried after 1, 2, 4 s (never every poll).
  EXPECT_EQ(count_lines_with(log, "test-job-b01-blocked: rejected:"), 1) << log;
  const int tries = count_lines_with(log, "test-job-b01-blocked: rejected push lost");
  EXPECT_GE(tries, 2) << log;
  EXPECT_LE(tries, 4) << log;
  EXPECT_EQ(world_.state(branch), "");  // still queued: nothing got through

  // Once the server accepts it again, the same receipt lands at the next retry.
  fs::remove(hook);
  const auto done = world_.wait_terminal({branch}, 30);
  ASSERT_TRUE(done.at(branch).is_object()) << runner->log();
  EXPECT_EQ(done.at(branch).value("state", ""), "rejected");
  EXPECT_NE(done.at(branch).value("reason", "").find("a symlink (mode 120000)"), std::string::npos);
  EXPECT_EQ(count_lines_with(runner->log(), "test-job-b01-blocked: rejected:"), 1);
  EXPECT_TRUE(fleet::alive(runner->pid()));
}

}  // namespace
}  // namespace kakeya::testing
