#pragma once
// De-duplication of heartbeat log tails for live progress.
//
// Each heartbeat carries `log_tail`: the last lines of the job log at that moment (a window
// that slides forward, possibly cut mid-line at its start by a byte cap). Consecutive tails
// overlap; printing each whole tail would repeat lines. LogTailDedupe returns only the lines not
// shown yet.

#include <string>
#include <string_view>
#include <vector>

namespace kakeya::client {

class LogTailDedupe {
 public:
  // Feeds the tail of the next heartbeat and returns the complete lines (without '\n') that
  // were not returned before, in order. Rules:
  //  - Only complete lines (terminated by '\n') are returned; a trailing partial line is
  //    held back until a later tail shows it complete.
  //  - The overlap is the longest suffix of the previous tail's complete lines that equals a
  //    prefix of this tail's lines; the first line of this tail may be a cut-off end of the
  //    matching earlier line (byte-capped tail).
  //  - No overlap at all (more output than one window since the last heartbeat): every line is
  //    returned, preceded by the marker line kGapMarker.
  //  - An identical tail returns nothing.
  std::vector<std::string> update(std::string_view tail);

  // Forgets what was shown (a new attempt starts a new log).
  void reset() { shown_.clear(); }

  static constexpr std::string_view kGapMarker = "[...]";

 private:
  std::vector<std::string> shown_;  // complete lines of the last tail
};

// Splits `text` into its complete lines ('\n'-terminated, '\r' before '\n' dropped); a
// trailing fragment without '\n' is not included.
std::vector<std::string> complete_lines(std::string_view text);

}  // namespace kakeya::client
