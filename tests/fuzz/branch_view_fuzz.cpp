// libFuzzer target: the runner's branch-view reader (runner/branch_view.h over GitBus::read_file)
// on request trees built from the input in a throwaway bare repository, odd modes included, and
// the receipt a runner would write from what it read.
//
// Input: up to five sections separated by NUL bytes:
//   1. a line of mode tokens for `.kakeya`, `request.json`, `run`, `status.json`, `cancel.json`
//      (missing tokens: the usual 40000 / 100644; the token "-" leaves the entry out; anything
//      else is written into the tree as given, e.g. 120000, 160000, 100664, 0, junk), optionally
//      followed by "dup" (request.json appears twice);
//   2. the request.json bytes, 3. status.json, 4. cancel.json (absent sections: entry left out).
// Entries point at a blob of their section's bytes, except `.kakeya` and `run`, which point at
// their trees whatever their mode says, and mode 160000 entries, which point at a missing commit.
//
// Invariants (a violation traps):
//  - read_branch_view succeeds (the tip is always present) and never throws;
//  - every error string is well-formed UTF-8 and names the path it is about;
//  - request.json is read only when it really is a unique regular file (100644/100755) inside a
//    real `.kakeya` directory, and then its bytes are exactly the section's;
//  - the documents a runner writes from the view (status.json of a rejection quoting the errors,
//    summary.json) are well-formed UTF-8.
#include <git2.h>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "bridge/gitbus.h"
#include "bridge/json_text.h"
#include "bridge/limits.h"
#include "bridge/utf8.h"
#include "runner/branch_view.h"
#include "tests/harness/raw_objects.h"

namespace {

namespace fs = std::filesystem;
using kakeya::testing::RawEntry;

// A violated invariant: say which, then crash so libFuzzer keeps the input.
#define check(cond)                                                                         \
  do {                                                                                      \
    if (!(cond)) {                                                                          \
      std::fprintf(stderr, "invariant violated at %s:%d: %s\n", __FILE__, __LINE__, #cond); \
      __builtin_trap();                                                                     \
    }                                                                                       \
  } while (0)

struct World {
  fs::path dir;
  std::unique_ptr<kakeya::bridge::GitBus> bus;
  std::unique_ptr<kakeya::testing::OpenOdb> odb;
  int runs = 0;

  World() {
    char tmpl[] = "/tmp/kakeya-branch-view-fuzz-XXXXXX";
    dir = ::mkdtemp(tmpl);
    reopen();
  }
  ~World() {
    odb.reset();
    bus.reset();
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  // A fresh cache every few thousand inputs, so loose objects do not pile up.
  void reopen() {
    odb.reset();
    bus.reset();
    std::error_code ec;
    fs::remove_all(dir / "cache", ec);
    auto b = kakeya::bridge::GitBus::open("git://127.0.0.1:9/unused.git", dir / "cache", {});
    check(b.ok());
    bus = std::make_unique<kakeya::bridge::GitBus>(std::move(b).value());
    odb = std::make_unique<kakeya::testing::OpenOdb>((dir / "cache").string());
  }
};

World& world() {
  static World w;
  return w;
}

std::vector<std::string> split_sections(std::string_view in) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (out.size() < 4) {
    const std::size_t nul = in.find('\0', start);
    if (nul == std::string_view::npos) break;
    out.emplace_back(in.substr(start, nul - start));
    start = nul + 1;
  }
  if (start <= in.size()) out.emplace_back(in.substr(start));
  return out;
}

// A mode token as git reads it (tree-walk.c: octal digits only, any number of them), or -1.
long long octal_mode(const std::string& mode) {
  if (mode.empty()) return -1;
  long long v = 0;
  for (char c : mode) {
    if (c < '0' || c > '7') return -1;
    v = std::min<long long>(v * 8 + (c - '0'), 1LL << 40);
  }
  return v;
}
bool is_regular(const std::string& mode) { return octal_mode(mode) == 0100644 || octal_mode(mode) == 0100755; }
bool is_dir(const std::string& mode) { return octal_mode(mode) == 040000; }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  World& w = world();
  if (++w.runs % 4000 == 0) w.reopen();
  git_odb* odb = w.odb->odb;

  const std::vector<std::string> sec = split_sections(std::string_view(reinterpret_cast<const char*>(data), size));
  std::vector<std::string> modes = {"40000", "100644", "40000", "100644", "100644"};
  bool dup = false;
  {
    std::istringstream line(sec[0]);
    std::string tok;
    for (std::size_t i = 0; line >> tok;) {
      if (tok == "dup") {
        dup = true;
      } else if (i < modes.size()) {
        modes[i++] = tok;
      }
    }
  }
  for (const auto& m : modes) {
    // A mode token git could not even write (spaces, NUL are impossible) is kept short.
    if (m.size() > 12) return 0;
  }
  const auto section = [&](std::size_t i) -> std::optional<std::string> {
    return i < sec.size() ? std::optional<std::string>(sec[i]) : std::nullopt;
  };
  git_oid missing_commit;
  git_oid_fromstr(&missing_commit, "1111111111111111111111111111111111111111");
  const auto entry = [&](const std::string& mode, const std::string& name, const std::string& content) {
    return RawEntry{mode, name, mode == "160000" ? missing_commit : kakeya::testing::write_raw_blob(odb, content)};
  };

  try {
    std::vector<RawEntry> run;
    if (section(2) && modes[3] != "-") run.push_back(entry(modes[3], "status.json", *section(2)));
    if (section(3) && modes[4] != "-") run.push_back(entry(modes[4], "cancel.json", *section(3)));
    std::vector<RawEntry> kakeya;
    if (section(1) && modes[1] != "-") {
      kakeya.push_back(entry(modes[1], "request.json", *section(1)));
      if (dup) kakeya.push_back(entry(modes[1], "request.json", *section(1) + " "));
    }
    if (!run.empty() && modes[2] != "-") kakeya.push_back({modes[2], "run", kakeya::testing::write_raw_tree(odb, run)});
    std::vector<RawEntry> root{entry("100644", "README.md", "workload\n")};
    if (modes[0] != "-") root.push_back({modes[0], ".kakeya", kakeya::testing::write_raw_tree(odb, kakeya)});
    const git_oid commit =
        kakeya::testing::write_raw_commit(odb, kakeya::testing::write_raw_tree(odb, root));
    const std::string tip = kakeya::testing::oid_hex(commit);

    // read_branch_view fails only when the tip itself is missing, which cannot happen here.
    auto v = kakeya::runner::read_branch_view(*w.bus, "refs/heads/kakeya/req/fuzz-abcd", tip);
    check(v.ok());
    for (const std::string* e : {&v->request_error, &v->status_error, &v->cancel_error}) {
      check(kakeya::bridge::is_valid_utf8(*e));
      if (!e->empty()) check(e->find(".kakeya") != std::string::npos);
    }
    // The .kakeya tree is read with git's rules: one entry whose mode is not octal digits makes
    // the whole tree malformed.
    const bool run_in_kakeya = !run.empty() && modes[2] != "-";
    const bool request_is_file = is_dir(modes[0]) && is_regular(modes[1]) && !dup && section(1).has_value() &&
                                 section(1)->size() <= kakeya::bridge::kMaxRequestBytes &&
                                 (!run_in_kakeya || octal_mode(modes[2]) >= 0);
    // Read exactly when it is a real file, and then byte for byte.
    check(v->request_json.has_value() == request_is_file);
    if (request_is_file) check(*v->request_json == *section(1));
    check(!(v->request_json && !v->request_error.empty()));

    // What a runner writes from this view: a rejection quoting every error, and its summary.
    kakeya::bridge::RunStatus st = v->status.value_or(kakeya::bridge::RunStatus{});
    st.state = kakeya::bridge::RunState::Rejected;
    st.reason = kakeya::bridge::printable(v->request_error + v->status_error + v->cancel_error, 2048);
    check(kakeya::bridge::is_valid_utf8(kakeya::bridge::to_json_file(kakeya::bridge::to_json(st))));
  } catch (const std::runtime_error&) {
    // write_raw_* could not write the object (an invalid tree for git_odb_write): not a reader case.
  }
  return 0;
}
