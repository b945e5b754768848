// kakeya gate FILE...: run the evidence gate (DESIGN.md §6, bridge/gate.h) over report files by
// hand — the same rules the runner applies to a preset's declared reports.
// Exit 0: every report passed; 1: at least one violation, or a file missing or not JSON (one
// error line naming it).
#include <fstream>
#include <iostream>
#include <sstream>

#include "bridge/gate.h"
#include "bridge/json_strict.h"
#include "client/cmd/commands.h"
#include "client/output.h"

namespace kakeya::client::cmd {

Command add_gate(CLI::App& root, GlobalOptions& g) {
  auto* sub = root.add_subcommand("gate", "Check report JSON files against the evidence gate");
  auto files = std::make_shared<std::vector<std::string>>();
  auto rules = std::make_shared<std::vector<std::string>>();
  sub->add_option("files", *files, "Report files (report.json of a preset)")->required();
  sub->add_option("--rules", *rules, "Only these rule codes (default: the rules for each report's kind)")
      ->delimiter(',');
  return {sub, [&g, files, rules]() {
            nlohmann::json out = nlohmann::json::array();
            bool all_passed = true;
            for (const auto& path : *files) {
              std::ifstream in(path, std::ios::binary);
              if (!in) return fail(g, make_error(errc::kIo, "cannot read report " + path));
              std::ostringstream ss;
              ss << in.rdbuf();
              auto report = bridge::parse_json_strict(ss.str());
              if (!report.ok()) {
                return fail(g, make_error(report.error().code, path + ": " + report.error().message));
              }
              const auto verdict = bridge::evaluate_gate(report.value(), *rules);
              all_passed = all_passed && verdict.passed;
              nlohmann::json j = verdict.to_json();
              j["file"] = path;
              out.push_back(j);
              if (!g.json) {
                std::cout << (verdict.passed ? "PASS " : "FAIL ") << path << " ("
                          << verdict.rules_checked.size() << " rules checked)\n";
                for (const auto& v : verdict.evidence_violations) {
                  std::cout << "  " << v.code << " at " << (v.path.empty() ? "/" : v.path) << ": " << v.message << "\n";
                }
              }
            }
            if (g.json) print_json(out);
            return all_passed ? 0 : 1;
          }};
}

}  // namespace kakeya::client::cmd
