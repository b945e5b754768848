#include "runner/publish.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "bridge/json_text.h"
#include "runner/branch_view.h"

namespace kakeya::runner {

namespace fs = std::filesystem;

PublishOutcome publish_final(bridge::GitBus& bus, FinalPublish& p, const bridge::CommitAuthor& author,
                             double max_seconds) {
  using clock = std::chrono::steady_clock;
  const auto deadline = clock::now() + std::chrono::duration<double>(max_seconds);
  std::mt19937 rng(std::random_device{}());
  double backoff = 0.25;
  for (int attempt = 1;; ++attempt) {
    auto commit = make_runner_commit(bus, p.tip, p.changes, p.what, author);
    if (commit.ok()) {
      auto pushed = bus.push_cas(p.ref, commit.value(), p.tip);
      if (pushed.ok() && pushed.value() == bridge::PushOutcome::Won) {
        p.tip = commit.value();
        return PublishOutcome::Published;
      }
      if (pushed.ok()) {
        // CAS lost: refetch. Re-apply on the new tip only if it still carries our claim.
        auto view = fetch_branch_view(bus, p.ref);
        if (!view.ok() && view.error().code == errc::kRefGone) return PublishOutcome::Gone;
        if (view.ok()) {
          const auto& st = view->status;
          if (!st || st->claim_gen != p.claim_gen || st->runner_id != p.runner_id) {
            spdlog::warn("publish {}: fenced (claim_gen now {}), dropping result", p.ref,
                         st ? st->claim_gen : 0);
            return PublishOutcome::Fenced;
          }
          spdlog::info("publish {}: tip moved by client commits, re-applying on {}", p.ref,
                       view->tip.substr(0, 12));
          p.tip = view->tip;
          continue;  // immediate retry on the new tip
        }
        spdlog::warn("publish {}: refetch failed: {}", p.ref, view.error().str());
      } else {
        spdlog::warn("publish {}: push failed (attempt {}): {}", p.ref, attempt, pushed.error().str());
      }
    } else {
      spdlog::warn("publish {}: commit failed: {}", p.ref, commit.error().str());
    }
    if (clock::now() >= deadline) return PublishOutcome::RetryLater;
    std::uniform_real_distribution<double> jitter(0.8, 1.2);
    std::this_thread::sleep_for(std::chrono::duration<double>(backoff * jitter(rng)));
    backoff = std::min(backoff * 2, 10.0);
  }
}

Status spool_write(const fs::path& dir, const FinalPublish& p) {
  std::error_code ec;
  fs::create_directories(dir / "files", ec);
  if (ec) return make_error(errc::kIo, "cannot create " + dir.string() + ": " + ec.message());
  nlohmann::json meta{{"ref", p.ref}, {"runner_id", p.runner_id}, {"claim_gen", p.claim_gen},
                      {"tip", p.tip}, {"what", p.what}, {"files", nlohmann::json::array()}};
  for (const auto& c : p.changes) {
    if (!c.content) continue;
    const fs::path f = dir / "files" / c.path;
    fs::create_directories(f.parent_path(), ec);
    std::ofstream out(f, std::ios::binary);
    out.write(c.content->data(), static_cast<std::streamsize>(c.content->size()));
    if (!out) return make_error(errc::kIo, "cannot write " + f.string());
    meta["files"].push_back(c.path);
  }
  const fs::path tmp = dir / "meta.json.tmp";
  {
    std::ofstream out(tmp);
    out << bridge::to_json_file(meta);
    if (!out) return make_error(errc::kIo, "cannot write " + tmp.string());
  }
  fs::rename(tmp, dir / "meta.json", ec);  // meta.json appears last: a complete spool entry
  if (ec) return make_error(errc::kIo, "cannot rename " + tmp.string() + ": " + ec.message());
  return ok_status();
}

Result<FinalPublish> spool_read(const fs::path& dir) {
  std::ifstream in(dir / "meta.json");
  if (!in) return make_error(errc::kIo, "no meta.json in " + dir.string());
  nlohmann::json meta;
  try {
    in >> meta;
    FinalPublish p;
    p.ref = meta.at("ref").get<std::string>();
    p.runner_id = meta.at("runner_id").get<std::string>();
    p.claim_gen = meta.at("claim_gen").get<int64_t>();
    p.tip = meta.at("tip").get<std::string>();
    p.what = meta.at("what").get<std::string>();
    for (const auto& f : meta.at("files")) {
      const std::string path = f.get<std::string>();
      std::ifstream fin(dir / "files" / path, std::ios::binary);
      if (!fin) return make_error(errc::kIo, "spooled file missing: " + (dir / "files" / path).string());
      std::ostringstream ss;
      ss << fin.rdbuf();
      p.changes.push_back({path, ss.str()});
    }
    return p;
  } catch (const std::exception& e) {
    return make_error(errc::kIo, "bad spool meta.json in " + dir.string() + ": " + e.what());
  }
}

}  // namespace kakeya::runner
