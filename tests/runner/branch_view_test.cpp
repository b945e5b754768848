// read_branch_view over hand-made request trees: every shape of request.json, status.json and
// cancel.json ends in a value or an error string naming the path, never in a failed read.
#include "runner/branch_view.h"

#include <gtest/gtest.h>

#include "bridge/limits.h"
#include "tests/harness/paths.h"
#include "tests/harness/raw_objects.h"

namespace kakeya::runner {
namespace {

using testing::RawEntry;

const char* kRequest =
    R"({"schema_version": 1, "preset": "echo-test", "params": {}, "nonce": "abcd1234", "requested_by": "a",)"
    R"( "created_at": "2024-05-01T12:00:00Z", "client": {"name": "kakeya", "version": "0.1.0"}})";

class BranchViewRead : public ::testing::Test {
 protected:
  void SetUp() override {
    auto b = bridge::GitBus::open("git://127.0.0.1:9/unused.git", tmp_.path() / "cache", bridge::Credentials{});
    ASSERT_TRUE(b.ok()) << b.error().str();
    bus_ = std::make_unique<bridge::GitBus>(std::move(b).value());
    odb_ = std::make_unique<testing::OpenOdb>((tmp_.path() / "cache").string());
    request_ = testing::write_raw_blob(odb_->odb, kRequest);
  }
  git_oid blob(const std::string& s) { return testing::write_raw_blob(odb_->odb, s); }
  git_oid tree(const std::vector<RawEntry>& e) { return testing::write_raw_tree(odb_->odb, e); }
  // A tip with .kakeya = {request.json, run/ = `run`} (run omitted when empty).
  BranchView view(const std::vector<RawEntry>& kakeya) {
    const git_oid root = tree({{"40000", ".kakeya", tree(kakeya)}});
    const std::string tip = testing::oid_hex(testing::write_raw_commit(odb_->odb, root));
    auto v = read_branch_view(*bus_, "refs/heads/kakeya/req/echo-test-abcd1234", tip);
    EXPECT_TRUE(v.ok()) << v.error().str();
    return v.ok() ? v.value() : BranchView{};
  }
  RawEntry run_dir(const std::vector<RawEntry>& run) { return {"40000", "run", tree(run)}; }

  testing::TempDir tmp_{"kakeya-view"};
  std::unique_ptr<bridge::GitBus> bus_;
  std::unique_ptr<testing::OpenOdb> odb_;
  git_oid request_;
};

TEST_F(BranchViewRead, ValidRequestQueued) {
  const BranchView v = view({{"100644", "request.json", request_}});
  ASSERT_TRUE(v.request_json.has_value());
  EXPECT_EQ(*v.request_json, kRequest);
  EXPECT_TRUE(v.request_error.empty());
  EXPECT_EQ(v.state(), bridge::RunState::Queued);
  EXPECT_FALSE(v.cancel_requested);
}

TEST_F(BranchViewRead, RequestShapesBecomeErrorsNamingThePath) {
  git_oid gitlink;
  ASSERT_EQ(git_oid_fromstr(&gitlink, "1111111111111111111111111111111111111111"), 0);
  const std::vector<std::pair<RawEntry, std::string>> shapes = {
      {{"40000", "request.json", tree({{"100644", "x", request_}})}, "a directory"},
      {{"120000", "request.json", blob(kRequest)}, "a symlink (mode 120000)"},
      {{"160000", "request.json", gitlink}, "a submodule"},
      {{"100664", "request.json", request_}, "non-standard mode 100664"},
      {{"100644", "request.json", blob(std::string(bridge::kMaxRequestBytes + 1, ' '))}, "more than the limit"},
  };
  for (const auto& [entry, needle] : shapes) {
    const BranchView v = view({entry});
    EXPECT_FALSE(v.request_json.has_value()) << needle;
    EXPECT_NE(v.request_error.find("'.kakeya/request.json'"), std::string::npos) << v.request_error;
    EXPECT_NE(v.request_error.find(needle), std::string::npos) << v.request_error;
  }
  // At the limit it is read (and left to the parser).
  const BranchView at = view({{"100644", "request.json", blob(std::string(bridge::kMaxRequestBytes, ' '))}});
  EXPECT_TRUE(at.request_error.empty()) << at.request_error;
  EXPECT_TRUE(at.request_json.has_value());
}

TEST_F(BranchViewRead, StatusShapesAndContentBecomeStatusErrors) {
  const std::vector<std::pair<RawEntry, std::string>> shapes = {
      {{"40000", "status.json", tree({{"100644", "x", request_}})}, "'.kakeya/run/status.json'"},
      {{"120000", "status.json", blob("{\"state\": \"succeeded\", \"reason\": \"forged\"}")}, "a symlink"},
      {{"100644", "status.json", blob(std::string(bridge::kMaxStatusBytes + 1, ' '))}, "more than the limit"},
      {{"100644", "status.json", blob("{\"state\": \"\xff\"}")}, "invalid .kakeya/run/status.json"},
      {{"100644", "status.json", blob("{\"state\": \"bogus\"}")}, "unknown state"},
  };
  for (const auto& [entry, needle] : shapes) {
    const BranchView v = view({{"100644", "request.json", request_}, run_dir({entry})});
    EXPECT_FALSE(v.status.has_value()) << needle;
    EXPECT_NE(v.status_error.find(needle), std::string::npos) << v.status_error;
  }
}

TEST_F(BranchViewRead, CancelShapesCountAsRequestedAndCarryAnError) {
  const std::vector<std::pair<RawEntry, std::string>> shapes = {
      {{"40000", "cancel.json", tree({{"100644", "x", request_}})}, "'.kakeya/run/cancel.json'"},
      {{"120000", "cancel.json", blob("x")}, "a symlink"},
      {{"100644", "cancel.json", blob(std::string(bridge::kMaxCancelBytes + 1, ' '))}, "more than the limit"},
      {{"100644", "cancel.json", blob("not json")}, "invalid .kakeya/run/cancel.json"},
  };
  for (const auto& [entry, needle] : shapes) {
    const BranchView v = view({{"100644", "request.json", request_}, run_dir({entry})});
    EXPECT_TRUE(v.cancel_requested) << needle;
    EXPECT_FALSE(v.cancel.has_value());
    EXPECT_NE(v.cancel_error.find(needle), std::string::npos) << v.cancel_error;
  }
  const BranchView ok = view({{"100644", "request.json", request_},
                              run_dir({{"100644", "cancel.json",
                                        blob(R"({"requested_by": "b", "created_at": "2024-05-01T12:00:00Z", "reason": "stop"})")}})});
  EXPECT_TRUE(ok.cancel_requested);
  ASSERT_TRUE(ok.cancel.has_value()) << ok.cancel_error;
  EXPECT_EQ(ok.cancel->reason, "stop");
}

TEST_F(BranchViewRead, AMissingTipIsTheOnlyReadError) {
  auto v = read_branch_view(*bus_, "refs/heads/kakeya/req/x", "5555555555555555555555555555555555555555");
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.error().code, errc::kNotFetched);
}

}  // namespace
}  // namespace kakeya::runner
