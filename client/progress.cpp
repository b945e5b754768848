#include "client/progress.h"

#include <fmt/format.h>

#include "bridge/json_text.h"

namespace kakeya::client {

std::vector<nlohmann::json> ProgressTracker::observe(const BranchSnapshot& snap, double t) {
  std::vector<nlohmann::json> events;
  const auto& st = snap.status;
  const std::string state = bridge::to_string(st.state);
  if (seen_ && (st.claim_gen != claim_gen_ || st.attempt != attempt_)) logs_.reset();
  if (!seen_ || state != state_ || st.runner_id != runner_ || st.claim_gen != claim_gen_ || st.attempt != attempt_) {
    events.push_back({{"event", "state"},
                      {"state", state},
                      {"reason", st.reason},
                      {"runner_id", st.runner_id},
                      {"claim_gen", st.claim_gen},
                      {"attempt", st.attempt},
                      {"t", t}});
  }
  seen_ = true;
  state_ = state;
  runner_ = st.runner_id;
  claim_gen_ = st.claim_gen;
  attempt_ = st.attempt;
  if (!st.log_tail.empty()) {
    auto lines = logs_.update(st.log_tail);
    if (!lines.empty()) events.push_back({{"event", "log"}, {"lines", lines}, {"t", t}});
  }
  return events;
}

std::string format_state_event(const nlohmann::json& e) {
  std::string line = fmt::format("[{:7.1f}s] {}", e.value("t", 0.0), e.value("state", std::string()));
  const std::string runner = e.value("runner_id", std::string());
  if (!runner.empty()) line += " on runner " + runner;
  if (e.value("attempt", int64_t{0}) > 1) line += fmt::format(" (attempt {})", e.value("attempt", int64_t{0}));
  const std::string reason = e.value("reason", std::string());
  if (!reason.empty()) line += ": " + reason;
  return line;
}

void ProgressPrinter::emit(const nlohmann::json& event) {
  switch (mode_) {
    case Mode::Quiet:
      return;
    case Mode::Json:
      json_ << bridge::to_json_text(event) << '\n' << std::flush;
      return;
    case Mode::Human: {
      const std::string kind = event.value("event", std::string());
      if (kind == "state") {
        human_ << format_state_event(event) << '\n';
      } else if (kind == "log") {
        for (const auto& l : event["lines"]) human_ << "  | " << l.get<std::string>() << '\n';
      }
      human_ << std::flush;
      return;
    }
  }
}

}  // namespace kakeya::client
