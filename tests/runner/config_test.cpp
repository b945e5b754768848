#include "runner/config.h"

#include <unistd.h>

#include <gtest/gtest.h>

#include <fstream>

#include "tests/harness/paths.h"
#include "tests/harness/ssh_keys.h"

namespace kakeya::runner {
namespace {

const char* kMinimal =
    "remote_url: git://127.0.0.1:9418/repo.git\n"
    "work_dir: work\n"
    "catalog_path: /opt/kakeya/presets.yaml\n";

Result<RunnerConfig> parse(const std::string& text) {
  return parse_runner_config(text, "/etc/kakeya/runner.yaml");
}

// Asserts an error with `code` whose message contains every needle.
void expect_error(const std::string& text, const std::string& code, std::vector<std::string> needles) {
  auto r = parse(text);
  ASSERT_FALSE(r.ok()) << text;
  EXPECT_EQ(r.error().code, code) << r.error().str();
  for (const auto& n : needles) EXPECT_NE(r.error().message.find(n), std::string::npos) << r.error().str();
}

TEST(RunnerConfig, MinimalConfigGetsDefaults) {
  auto r = parse(kMinimal);
  ASSERT_TRUE(r.ok()) << r.error().str();
  const RunnerConfig& c = *r;
  EXPECT_EQ(c.remote_url, "git://127.0.0.1:9418/repo.git");
  EXPECT_EQ(c.work_dir, std::filesystem::path("/etc/kakeya/work"));  // relative to the file
  EXPECT_EQ(c.catalog_path, std::filesystem::path("/opt/kakeya/presets.yaml"));
  EXPECT_FALSE(c.credentials_file.has_value());
  EXPECT_EQ(c.branch_patterns, std::vector<std::string>{"kakeya/req/**"});
  char host[256] = {0};
  ::gethostname(host, sizeof host - 1);
  EXPECT_EQ(c.runner_id, host);
  EXPECT_DOUBLE_EQ(c.poll_interval_s, 10);
  EXPECT_DOUBLE_EQ(c.poll_jitter, 0.2);
  EXPECT_DOUBLE_EQ(c.heartbeat_s, 30);
  EXPECT_DOUBLE_EQ(c.lease_s, 300);
  EXPECT_EQ(c.max_jobs, 1);
  EXPECT_EQ(c.log_cap_bytes, 8u * 1024 * 1024);
  EXPECT_DOUBLE_EQ(c.kill_grace_s, 10);
  EXPECT_DOUBLE_EQ(c.shutdown_grace_s, 600);
  EXPECT_EQ(c.tool_dirs.size(), 3u);
  EXPECT_EQ(c.identity.name, "kakeya-runner");
  EXPECT_EQ(c.identity.email, "runner@kakeya.invalid");
  EXPECT_EQ(c.source_path, std::filesystem::path("/etc/kakeya/runner.yaml"));
}

TEST(RunnerConfig, ExampleConfigLoads) {
  auto r = load_runner_config(testing::source_dir() / "deploy" / "runner.example.yaml");
  ASSERT_TRUE(r.ok()) << r.error().str();
  EXPECT_EQ(r->runner_id, "gpu-box-1");
  EXPECT_EQ(r->labels, (std::vector<std::string>{"cpu", "avx2"}));
  EXPECT_EQ(r->models.at("draft"), std::filesystem::path("/srv/models/llama-3.2-1b-instruct-q4_0.gguf"));
  EXPECT_EQ(r->secret_env, std::vector<std::string>{"HF_TOKEN"});
  EXPECT_EQ(r->log_cap_bytes, 8u << 20);
  EXPECT_EQ(*r->credentials_file, std::filesystem::path("/etc/kakeya/credentials"));
}

TEST(RunnerConfig, AllKeysParsed) {
  auto r = parse(std::string(kMinimal) +
                 "credentials_file: creds/token\n"
                 "branch_patterns: [kakeya/req/**, agents/kakeya-*]\n"
                 "runner_id: box_2.lab-a\n"
                 "labels: [gpu, cuda]\n"
                 "models: {target: models/t.gguf, draft: ~/m/d.gguf}\n"
                 "poll_interval_s: 0.05\n"
                 "poll_jitter: 0\n"
                 "heartbeat_s: 0.5\n"
                 "lease_s: 2\n"
                 "max_jobs: 4\n"
                 "secret_env: [HF_TOKEN, OTHER_KEY]\n"
                 "log_cap_bytes: 65536\n"
                 "kill_grace_s: 0\n"
                 "shutdown_grace_s: 5.5\n"
                 "tool_dirs: [bin, /usr/bin]\n"
                 "identity: {name: Lab Runner, email: lab@example.org}\n");
  ASSERT_TRUE(r.ok()) << r.error().str();
  EXPECT_EQ(*r->credentials_file, std::filesystem::path("/etc/kakeya/creds/token"));
  EXPECT_EQ(r->branch_patterns.size(), 2u);
  EXPECT_EQ(r->runner_id, "box_2.lab-a");
  EXPECT_EQ(r->models.at("target"), std::filesystem::path("/etc/kakeya/models/t.gguf"));
  const char* home = std::getenv("HOME");
  if (home != nullptr) {
    EXPECT_EQ(r->models.at("draft"), (std::filesystem::path(home) / "m/d.gguf").lexically_normal());
  }
  EXPECT_DOUBLE_EQ(r->poll_interval_s, 0.05);
  EXPECT_DOUBLE_EQ(r->heartbeat_s, 0.5);
  EXPECT_DOUBLE_EQ(r->lease_s, 2);
  EXPECT_EQ(r->max_jobs, 4);
  EXPECT_EQ(r->log_cap_bytes, 65536u);
  EXPECT_DOUBLE_EQ(r->kill_grace_s, 0);
  EXPECT_DOUBLE_EQ(r->shutdown_grace_s, 5.5);
  EXPECT_EQ(r->tool_dirs, (std::vector<std::filesystem::path>{"/etc/kakeya/bin", "/usr/bin"}));
  EXPECT_EQ(r->identity.name, "Lab Runner");
  EXPECT_EQ(r->identity.email, "lab@example.org");
}

TEST(RunnerConfig, UnknownKeyNamesLineAndKey) {
  expect_error(std::string(kMinimal) + "heartbeat: 5\n", "unknown_key",
               {"/etc/kakeya/runner.yaml:4:1", "`heartbeat`"});
  expect_error(std::string(kMinimal) + "identity:\n  name: x\n  mail: a@b\n", "unknown_key",
               {":6:3", "`mail`", "identity"});
}

TEST(RunnerConfig, DuplicateKeyIsAnError) {
  expect_error(std::string(kMinimal) + "max_jobs: 1\nmax_jobs: 2\n", "duplicate_key", {":5:1", "max_jobs"});
}

TEST(RunnerConfig, MissingRequiredKeys) {
  expect_error("work_dir: /w\ncatalog_path: /c\n", "missing_key", {"remote_url"});
  expect_error("remote_url: x\ncatalog_path: /c\n", "missing_key", {"work_dir"});
  expect_error("", "missing_key", {"empty"});
}

TEST(RunnerConfig, WrongTypes) {
  expect_error(std::string(kMinimal) + "max_jobs: two\n", "bad_type", {":4:", "max_jobs", "`two`"});
  expect_error(std::string(kMinimal) + "max_jobs: 1.5\n", "bad_type", {"max_jobs"});
  expect_error(std::string(kMinimal) + "poll_interval_s: \"10\"\n", "bad_type", {"poll_interval_s"});
  expect_error(std::string(kMinimal) + "labels: gpu\n", "bad_type", {"labels", "list"});
  expect_error(std::string(kMinimal) + "models: [a]\n", "bad_type", {"models", "mapping"});
  expect_error(std::string(kMinimal) + "log_cap_bytes: 8 MB\n", "bad_type", {"log_cap_bytes", "unit"});
  expect_error("[1, 2]\n", "bad_type", {"mapping"});
  expect_error("remote_url: [unclosed\n", "parse_error", {"/etc/kakeya/runner.yaml:"});
}

TEST(RunnerConfig, Bounds) {
  expect_error(std::string(kMinimal) + "poll_interval_s: 0.01\n", "out_of_range", {"poll_interval_s", "0.05"});
  expect_error(std::string(kMinimal) + "poll_jitter: 1\n", "out_of_range", {"poll_jitter"});
  expect_error(std::string(kMinimal) + "heartbeat_s: 300\n", "out_of_range", {"heartbeat_s", "lease_s"});
  expect_error(std::string(kMinimal) + "lease_s: 20\n", "out_of_range", {"heartbeat_s (30)", "lease_s (20)"});
  expect_error(std::string(kMinimal) + "max_jobs: 0\n", "out_of_range", {"max_jobs"});
  expect_error(std::string(kMinimal) + "kill_grace_s: -1\n", "out_of_range", {"kill_grace_s"});
  expect_error(std::string(kMinimal) + "log_cap_bytes: 100\n", "out_of_range", {"log_cap_bytes"});
  expect_error(std::string(kMinimal) + "log_cap_bytes: 2GiB\n", "out_of_range", {"log_cap_bytes"});
}

TEST(RunnerConfig, BadValues) {
  expect_error(std::string(kMinimal) + "runner_id: 'has space'\n", "bad_value", {"runner_id", "has space"});
  expect_error(std::string(kMinimal) + "runner_id: " + std::string(65, 'a') + "\n", "bad_value", {"runner_id"});
  expect_error(std::string(kMinimal) + "labels: [gpu, gpu]\n", "bad_value", {"gpu", "twice"});
  expect_error(std::string(kMinimal) + "labels: ['a/b']\n", "bad_value", {"labels[0]"});
  expect_error(std::string(kMinimal) + "models: {'../x': /m}\n", "bad_value", {"'../x'"});
  expect_error(std::string(kMinimal) + "secret_env: [HF-TOKEN]\n", "bad_value", {"secret_env[0]"});
  expect_error(std::string(kMinimal) + "branch_patterns: []\n", "bad_value", {"branch_patterns"});
  expect_error(std::string(kMinimal) + "branch_patterns: [refs/heads/x]\n", "bad_value", {"branch_patterns[0]"});
  expect_error(std::string(kMinimal) + "identity: {email: nobody}\n", "bad_value", {"identity.email"});
  expect_error("remote_url: x\nwork_dir: ''\ncatalog_path: /c\n", "bad_value", {":2:", "work_dir", "empty"});
  expect_error("remote_url: https://bot:ghp_secret@git.example.com/r.git\nwork_dir: /w\ncatalog_path: /c\n",
               "bad_value", {"remote_url", "credentials_file"});
  auto r = parse("remote_url: https://bot:ghp_secret@git.example.com/r.git\nwork_dir: /w\ncatalog_path: /c\n");
  EXPECT_EQ(r.error().message.find("ghp_secret"), std::string::npos);  // never echo the secret
  EXPECT_TRUE(parse("remote_url: https://bot@git.example.com/r.git\nwork_dir: /w\ncatalog_path: /c\n").ok());
}

TEST(RunnerConfig, LoadFromFileResolvesRelativeToIt) {
  testing::TempDir dir;
  const auto path = dir.path() / "runner.yaml";
  std::ofstream(path) << kMinimal << "tool_dirs: [tools]\n";
  auto r = load_runner_config(path);
  ASSERT_TRUE(r.ok()) << r.error().str();
  EXPECT_EQ(r->work_dir, dir.path() / "work");
  EXPECT_EQ(r->tool_dirs, std::vector<std::filesystem::path>{dir.path() / "tools"});
  auto missing = load_runner_config(dir.path() / "nope.yaml");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, errc::kIo);
  EXPECT_NE(missing.error().message.find("nope.yaml"), std::string::npos);
}

// identity.signing_key: unsigned by default; a key file that is not there is refused at load.
// request_signing: the allowed-signers file is read at load and each principal maps to presets.
TEST(RunnerConfig, SigningKeysAndRequestSigningPolicy) {
  testing::TempDir dir("kakeya-config");
  const auto key = dir.path() / "runner_key";
  std::ofstream(key) << "not read at load\n";
  const auto signers = dir.path() / "request_signers";
  auto alice = testing::make_ssh_key(dir.path(), "alice");
  ASSERT_TRUE(alice.ok()) << alice.error().str();
  std::ofstream(signers) << "alice@example.com " << testing::first_line(alice->string() + ".pub") << "\n";
  EXPECT_TRUE(parse(kMinimal)->identity.signing_key.empty());
  EXPECT_FALSE(parse(kMinimal)->request_signing.has_value());

  auto r = parse(std::string(kMinimal) + "identity: {signing_key: " + key.string() + "}\n" +
                 "request_signing:\n  allowed_signers: " + signers.string() +
                 "\n  presets: {alice@example.com: [generate, env-probe], ci@example.com: [\"*\"]}\n");
  ASSERT_TRUE(r.ok()) << r.error().str();
  EXPECT_EQ(r->identity.signing_key, key);
  ASSERT_TRUE(r->request_signing.has_value());
  EXPECT_EQ(r->request_signing->signers.entries().size(), 1u);
  EXPECT_EQ(r->request_signing->presets.at("alice@example.com"), (std::vector<std::string>{"generate", "env-probe"}));
  EXPECT_EQ(r->request_signing->presets.at("ci@example.com"), std::vector<std::string>{"*"});

  expect_error(std::string(kMinimal) + "identity: {signing_key: " + (dir.path() / "absent").string() + "}\n",
               "not_found", {"identity.signing_key", "absent"});
  expect_error(std::string(kMinimal) + "request_signing: {presets: {a@b: [x]}}\n", "missing_key",
               {"allowed_signers"});
  expect_error(std::string(kMinimal) + "request_signing: {allowed_signers: " + (dir.path() / "nope").string() +
                   ", presets: {}}\n",
               "io", {"request_signing.allowed_signers", "nope"});
  expect_error(std::string(kMinimal) + "request_signing: {allowed_signers: " + signers.string() +
                   ", presets: {a@b: generate}}\n",
               "bad_type", {"request_signing.presets.a@b"});
  expect_error(std::string(kMinimal) + "request_signing: {allowed_signers: " + signers.string() +
                   ", presets: {}, extra: 1}\n",
               "unknown_key", {"extra"});
}

TEST(ParseByteSize, UnitsAndErrors) {
  EXPECT_EQ(*parse_byte_size("4096"), 4096u);
  EXPECT_EQ(*parse_byte_size("12B"), 12u);
  EXPECT_EQ(*parse_byte_size("512 KiB"), 512u * 1024);
  EXPECT_EQ(*parse_byte_size("8MiB"), 8u << 20);
  EXPECT_EQ(*parse_byte_size("1GiB"), 1u << 30);
  EXPECT_FALSE(parse_byte_size("").ok());
  EXPECT_FALSE(parse_byte_size("MiB").ok());
  EXPECT_FALSE(parse_byte_size("8MB").ok());
  EXPECT_FALSE(parse_byte_size("-1").ok());
  EXPECT_FALSE(parse_byte_size("99999999999999999999").ok());
}

TEST(ResolveModel, ConfigThenHomeThenError) {
  testing::TempDir dir;
  const auto home = dir.path() / "home";
  std::filesystem::create_directories(home / ".kakeya" / "models");
  std::ofstream(home / ".kakeya" / "models" / "draft") << "gguf";
  std::ofstream(dir.path() / "target.gguf") << "gguf";
  std::ofstream(home / ".kakeya" / "models" / "target") << "shadowed";
  RunnerConfig c;
  c.source_path = "/etc/kakeya/runner.yaml";
  c.models["target"] = dir.path() / "target.gguf";
  c.models["gone"] = dir.path() / "gone.gguf";

  EXPECT_EQ(*resolve_model(c, "target", home), dir.path() / "target.gguf");  // config wins
  EXPECT_EQ(*resolve_model(c, "draft", home), home / ".kakeya" / "models" / "draft");

  auto none = resolve_model(c, "judge", home);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().code, errc::kNotFound);
  EXPECT_EQ(none.error().message,
            "model role 'judge' not configured (set models.judge in /etc/kakeya/runner.yaml or place "
            "~/.kakeya/models/judge)");

  auto gone = resolve_model(c, "gone", home);
  ASSERT_FALSE(gone.ok());
  EXPECT_NE(gone.error().message.find("gone.gguf"), std::string::npos);
  EXPECT_NE(gone.error().message.find("does not exist"), std::string::npos);

  EXPECT_EQ(resolve_model(c, "../../etc/passwd", home).error().code, errc::kBadValue);
  EXPECT_EQ(resolve_model(c, "..", home).error().code, errc::kBadValue);
}

}  // namespace
}  // namespace kakeya::runner

namespace kakeya::runner {
namespace {

TEST(RunnerConfig, ObservationAndRetentionKeys) {
  auto d = parse(kMinimal);
  ASSERT_TRUE(d.ok()) << d.error().str();
  EXPECT_FALSE(d->metrics_listen.has_value()) << "/metrics is off by default";
  EXPECT_EQ(d->keep_failed_jobs, 5);
  auto r = parse(std::string(kMinimal) +
                 "metrics_listen: 127.0.0.1:9464\nhealth_poll_failure_s: 120\nkeep_failed_jobs: 2\n"
                 "keep_failed_jobs_bytes: 64MiB\n");
  ASSERT_TRUE(r.ok()) << r.error().str();
  EXPECT_EQ(r->metrics_listen, "127.0.0.1:9464");
  EXPECT_EQ(r->health_poll_failure_s, 120);
  EXPECT_EQ(r->keep_failed_jobs, 2);
  EXPECT_EQ(r->keep_failed_jobs_bytes, std::size_t{64} << 20);
  expect_error(std::string(kMinimal) + "metrics_listen: 0.0.0.0:9464\n", "bad_value", {"metrics_listen", "0.0.0.0:9464", "loopback"});
  expect_error(std::string(kMinimal) + "keep_failed_jobs: -1\n", "out_of_range", {"keep_failed_jobs"});
}

}  // namespace
}  // namespace kakeya::runner
