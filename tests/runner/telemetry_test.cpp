#include "runner/telemetry.h"

#include <gtest/gtest.h>

#include "runner/log_fields.h"
#include "runner/metrics_server.h"
#include "runner/status_file.h"
#include "tests/harness/paths.h"

namespace kakeya::runner {
namespace {

// The value of the sample line `series` (name with labels, as exposed), or -1 when absent.
double sample(const std::string& text, const std::string& series) {
  std::size_t at = 0;
  while ((at = text.find(series + " ", at)) != std::string::npos) {
    if (at == 0 || text[at - 1] == '\n') return std::stod(text.substr(at + series.size() + 1));
    at += series.size();
  }
  return -1;
}

TEST(Telemetry, CountsEventsInPrometheusText) {
  Telemetry t("r1", {"generate"}, 300);
  t.claim_attempted();
  t.claim_attempted();
  t.claim_won();
  t.claim_lost();
  t.heartbeat_conflict();
  t.fenced();
  t.poll_finished(0.2, std::nullopt);
  t.poll_finished(0.1, Error{errc::kTransport, "connection refused"});
  t.job_finished({"kakeya/req/a", "generate", "succeeded", "exit code 0", "2026-01-01T00:00:00Z", 2.5});
  t.job_finished({"kakeya/req/b", "some-untrusted-name", "rejected", "unknown preset", "2026-01-01T00:00:01Z", std::nullopt});
  t.set_spool_depth(3);
  t.set_running({RunningJob{"kakeya/req/c", "generate", 1, 1, "2026-01-01T00:00:02Z"}});
  const std::string m = t.metrics_text();
  EXPECT_EQ(sample(m, "kakeya_runner_claim_attempts_total"), 2) << m;
  EXPECT_EQ(sample(m, "kakeya_runner_claim_wins_total"), 1);
  EXPECT_EQ(sample(m, "kakeya_runner_claim_losses_total"), 1);
  EXPECT_EQ(sample(m, "kakeya_runner_heartbeat_conflicts_total"), 1);
  EXPECT_EQ(sample(m, "kakeya_runner_fencing_events_total"), 1);
  EXPECT_EQ(sample(m, "kakeya_runner_poll_errors_total{kind=\"transport\"}"), 1) << m;
  EXPECT_EQ(sample(m, "kakeya_runner_poll_duration_seconds_count"), 2);
  EXPECT_EQ(sample(m, "kakeya_runner_jobs_total{preset=\"generate\",state=\"succeeded\"}"), 1) << m;
  // An untrusted preset name never becomes a label value.
  EXPECT_EQ(sample(m, "kakeya_runner_jobs_total{preset=\"other\",state=\"rejected\"}"), 1) << m;
  EXPECT_EQ(m.find("some-untrusted-name"), std::string::npos);
  EXPECT_EQ(sample(m, "kakeya_runner_job_duration_seconds_count{preset=\"generate\"}"), 1) << m;
  EXPECT_EQ(sample(m, "kakeya_runner_spool_depth"), 3);
  EXPECT_EQ(sample(m, "kakeya_runner_running_jobs"), 1);
  EXPECT_GT(sample(m, "kakeya_runner_last_successful_poll_timestamp_seconds"), 1.7e9);

  const auto s = t.state_json();
  EXPECT_EQ(s["runner_id"], "r1");
  ASSERT_EQ(s["recent"].size(), 2u);
  EXPECT_EQ(s["recent"][0]["branch"], "kakeya/req/b");  // newest first
  EXPECT_EQ(s["running"][0]["preset"], "generate");
  EXPECT_EQ(s["spool_depth"], 3);
  EXPECT_EQ(s["last_poll"]["ok"], false);
  EXPECT_NE(t.status_line().find("1 running, 3 spooled, last poll failed (transport)"), std::string::npos)
      << t.status_line();
}

TEST(Telemetry, HealthTurnsBadOnlyAfterTheBound) {
  Telemetry generous("r1", {}, 3600);
  EXPECT_TRUE(generous.health().healthy);
  generous.poll_finished(0.1, Error{errc::kAuthFailed, "refused"});
  EXPECT_TRUE(generous.health().healthy) << "one failure within the bound is still healthy";

  Telemetry strict("r2", {}, 0);  // any failure is older than a zero bound
  strict.poll_finished(0.1, std::nullopt);
  EXPECT_TRUE(strict.health().healthy);
  strict.poll_finished(0.1, Error{errc::kAuthFailed, "refused"});
  const Health h = strict.health();
  EXPECT_FALSE(h.healthy);
  EXPECT_NE(h.reason.find("refused"), std::string::npos) << h.reason;
  strict.poll_finished(0.1, std::nullopt);
  EXPECT_TRUE(strict.health().healthy);
}

TEST(MetricsServer, ResponsesByPathAndMethod) {
  Telemetry t("r1", {}, 0);
  EXPECT_EQ(metrics_response(t, "GET", "/metrics").status, 200);
  EXPECT_NE(metrics_response(t, "GET", "/metrics").body.find("kakeya_runner_info"), std::string::npos);
  EXPECT_EQ(metrics_response(t, "GET", "/healthz").status, 200);
  t.poll_finished(0.1, Error{errc::kTransport, "down"});
  EXPECT_EQ(metrics_response(t, "GET", "/healthz").status, 503);
  EXPECT_EQ(metrics_response(t, "GET", "/other").status, 404);
  EXPECT_EQ(metrics_response(t, "POST", "/metrics").status, 405);
}

TEST(MetricsServer, ListenAddressMustBeLoopback) {
  auto a = parse_listen_address("127.0.0.1:9464");
  ASSERT_TRUE(a.ok()) << a.error().str();
  EXPECT_EQ(a->host, "127.0.0.1");
  EXPECT_EQ(a->port, 9464);
  auto v6 = parse_listen_address("[::1]:0");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->host, "::1");
  for (const char* bad : {"0.0.0.0:9464", "10.0.0.1:80", "127.0.0.1", "127.0.0.1:99999", "example.com:80", ":80"}) {
    auto r = parse_listen_address(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().code, errc::kBadValue);
    EXPECT_NE(r.error().message.find(bad), std::string::npos) << r.error().message;
  }
}

TEST(LogFields, ScopesNestAndInnerWins) {
  EXPECT_EQ(current_log_fields_json(), "");
  {
    ScopedLogFields outer{{"branch", "kakeya/req/a"}, {"claim_gen", 2}};
    {
      ScopedLogFields inner{{"claim_gen", 3}, {"state", "failed"}};
      EXPECT_EQ(current_log_fields_json(), R"(,"branch":"kakeya/req/a","claim_gen":3,"state":"failed")");
    }
    EXPECT_EQ(current_log_fields_json(), R"(,"branch":"kakeya/req/a","claim_gen":2)");
  }
  EXPECT_EQ(current_log_fields_json(), "");
}

TEST(StatusFile, RoundTripsAndNamesAMissingFile) {
  testing::TempDir tmp;
  const auto path = tmp.path() / kStateFileName;
  auto missing = read_state_file(path);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, errc::kNotFound);
  EXPECT_NE(missing.error().message.find(path.string()), std::string::npos);
  Telemetry t("r9", {}, 60);
  ASSERT_TRUE(write_state_file(path, t.state_json()).ok());
  auto back = read_state_file(path);
  ASSERT_TRUE(back.ok()) << back.error().str();
  EXPECT_EQ((*back)["runner_id"], "r9");
  EXPECT_EQ(std::filesystem::status(path).permissions() & std::filesystem::perms::others_read,
            std::filesystem::perms::none);
}

}  // namespace
}  // namespace kakeya::runner
