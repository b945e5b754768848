// libFuzzer target: the strict readers of the bus documents a pusher controls or can forge —
// request.json (parse_request), status.json (parse_status), cancel.json (parse_cancel) — on the
// same arbitrary bytes. Invariants (a violation traps):
//  - a reader never throws or crashes; an error carries a code and a message that is well-formed,
//    one-line UTF-8 of bounded length (it goes into a receipt and a log line);
//  - what a reader accepts survives the writer: serialize/to_json, to_json_text, parse again,
//    and the result is the same value (the runner writes status.json back on top of what it read).
#include <cstddef>
#include <cstdio>
#include <cstdint>
#include <string>
#include <string_view>

#include "bridge/cancel_request.h"
#include "bridge/json_strict.h"
#include "bridge/json_text.h"
#include "bridge/limits.h"
#include "bridge/request.h"
#include "bridge/run_state.h"
#include "bridge/utf8.h"

namespace {

// A violated invariant: say which, then crash so libFuzzer keeps the input.
#define check(cond)                                                                         \
  do {                                                                                      \
    if (!(cond)) {                                                                          \
      std::fprintf(stderr, "invariant violated at %s:%d: %s\n", __FILE__, __LINE__, #cond); \
      __builtin_trap();                                                                     \
    }                                                                                       \
  } while (0)

template <typename T>
void check_error(const kakeya::Result<T>& r) {
  if (r.ok()) return;
  const auto& e = r.error();
  check(!e.message.empty());  // the code is one of bridge/error_codes.h by construction
  check(kakeya::bridge::is_valid_utf8(e.message));
  check(e.message.find('\n') == std::string::npos && e.message.find('\0') == std::string::npos);
  check(e.message.size() < 2048);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kakeya::bridge;
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  auto doc = parse_json_strict(text);
  check_error(doc);
  if (doc.ok()) check(is_valid_utf8(to_json_text(*doc)));

  auto req = parse_request(text);
  check_error(req);
  if (req.ok()) {
    auto again = parse_request(serialize_request(*req));
    check(again.ok());
    check(again->preset == req->preset && again->nonce == req->nonce && again->params == req->params &&
          again->requested_by == req->requested_by && again->created_at == req->created_at &&
          again->client.name == req->client.name && again->client.version == req->client.version);
  }

  auto st = parse_status(text);
  check_error(st);
  if (st.ok()) {
    const std::string written = to_json_file(to_json(*st));
    check(is_valid_utf8(written));
    if (written.size() > kMaxStatusBytes) return 0;  // pretty-printing made it larger than the limit
    auto again = parse_status(written);
    check(again.ok());
    check(again->state == st->state && again->reason == st->reason && again->claim_gen == st->claim_gen &&
          again->attempt == st->attempt && again->heartbeat_seq == st->heartbeat_seq &&
          again->labels == st->labels && again->progress == st->progress && again->log_tail == st->log_tail);
  }

  auto cancel = parse_cancel(text);
  check_error(cancel);
  if (cancel.ok()) {
    auto again = parse_cancel(to_json_file(to_json(*cancel)));
    check(again.ok());
    check(again->requested_by == cancel->requested_by && again->reason == cancel->reason);
  }
  return 0;
}
