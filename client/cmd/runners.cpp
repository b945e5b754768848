// kakeya runners [--within DURATION] [--all]
#include <iostream>

#include <fmt/format.h>

#include "bridge/json_text.h"
#include "bridge/units.h"
#include "bridge/utf8.h"
#include "client/cmd/commands.h"
#include "client/fleet.h"
#include "client/output.h"
#include "client/session.h"

namespace kakeya::client::cmd {

namespace {
std::string join(const nlohmann::json& arr) {
  if (!arr.is_array() || arr.empty()) return "-";
  std::string s;
  for (const auto& v : arr) {
    if (!s.empty()) s += ",";
    s += bridge::printable(v.is_string() ? v.get<std::string>() : bridge::to_json_text(v), 256);
  }
  return s;
}
}  // namespace

Command add_runners(CLI::App& root, GlobalOptions& g) {
  auto* sub = root.add_subcommand("runners", "List the runners seen recently (their kakeya/runners/<id> heartbeat)");
  auto within = std::make_shared<std::string>("10m");
  auto all = std::make_shared<bool>(false);
  sub->add_option("--within", *within, "Only runners whose last heartbeat is at most this old (default 10m)");
  sub->add_flag("--all", *all, "Every runner branch, however old");
  return {sub, [&g, within, all]() {
            auto limit = bridge::parse_duration_s(*within);
            if (!limit.ok()) return fail(g, limit.error());
            auto session = open_session(g);
            if (!session.ok()) return fail(g, session.error());
            auto runners = list_runners(session->bus);
            if (!runners.ok()) return fail(g, runners.error());
            std::vector<RunnerEntry> shown;
            for (auto& r : *runners) {
              if (*all || (r.age_s && *r.age_s <= *limit)) shown.push_back(std::move(r));
            }
            if (g.json) {
              nlohmann::json arr = nlohmann::json::array();
              for (const auto& r : shown) {
                nlohmann::json j = r.doc.is_object() ? r.doc : nlohmann::json::object();
                j["id"] = r.id;
                j["commit"] = r.commit;
                j["age_s"] = r.age_s ? nlohmann::json(*r.age_s) : nlohmann::json(nullptr);
                if (!r.error.empty()) j["error"] = r.error;
                arr.push_back(j);
              }
              print_json(arr);
              return kExitOk;
            }
            std::cout << fmt::format("{:<24} {:<10} {:<8} {:<20} {:>5} {}\n", "RUNNER", "STATE", "AGE", "LABELS", "JOBS",
                                     "RUNNING");
            for (const auto& r : shown) {
              const auto& d = r.doc;
              const std::string age = r.age_s ? fmt::format("{:.0f}s", *r.age_s) : "?";
              const std::string jobs = d.is_object() && d.contains("running") && d.contains("max_jobs")
                                           ? fmt::format("{}/{}", d["running"].size(), bridge::printable(bridge::to_json_text(d["max_jobs"]), 16))
                                           : "?";
              const std::string state = d.is_object() && d.contains("state") && d["state"].is_string()
                                            ? d["state"].get<std::string>()
                                            : "?";
              std::cout << fmt::format("{:<24} {:<10} {:<8} {:<20} {:>5} {}\n", bridge::printable(r.id, 64),
                                       bridge::printable(state, 32), age,
                                       d.is_object() ? join(d.value("labels", nlohmann::json::array())) : "-", jobs,
                                       d.is_object() ? join(d.value("running", nlohmann::json::array()))
                                                     : bridge::printable(r.error));
            }
            if (shown.empty()) std::cout << "(no runner seen within " << *within << ")\n";
            std::cout << std::flush;
            return kExitOk;
          }};
}

}  // namespace kakeya::client::cmd
