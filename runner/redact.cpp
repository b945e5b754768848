#include "runner/redact.h"

#include <algorithm>
#include <utility>

namespace kakeya::runner {
namespace {

// Accepts secrets of at least kMinSecretLen bytes, deduplicated, longest first (so the first
// match found at a position is the longest one).
std::vector<std::string> accept_secrets(const std::vector<std::string>& in,
                                        std::vector<IgnoredSecret>* ignored) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (in[i].size() < kMinSecretLen) {
      if (ignored != nullptr) {
        ignored->push_back({i, "secret #" + std::to_string(i) + " is " +
                                   std::to_string(in[i].size()) + " bytes, shorter than " +
                                   std::to_string(kMinSecretLen) + ": not redacted"});
      }
      continue;
    }
    out.push_back(in[i]);
  }
  std::sort(out.begin(), out.end(), [](const std::string& a, const std::string& b) {
    return a.size() != b.size() ? a.size() > b.size() : a < b;
  });
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace

std::string redact_all(std::string_view text, const std::vector<std::string>& secrets) {
  const std::vector<std::string> sorted = accept_secrets(secrets, nullptr);
  std::string out;
  std::size_t i = 0;
  while (i < text.size()) {
    const std::string* hit = nullptr;
    for (const std::string& s : sorted) {
      if (text.substr(i, s.size()) == s) {
        hit = &s;
        break;
      }
    }
    if (hit != nullptr) {
      out += kRedacted;
      i += hit->size();
    } else {
      out += text[i];
      ++i;
    }
  }
  return out;
}

StreamingRedactor::StreamingRedactor(std::vector<std::string> secrets, Sink sink)
    : sink_(std::move(sink)) {
  secrets_ = accept_secrets(secrets, &ignored_);
  for (const std::string& s : secrets_) {
    first_byte_[static_cast<unsigned char>(s[0])] = true;
    max_len_ = std::max(max_len_, s.size());
  }
}

void StreamingRedactor::write(std::string_view data) {
  if (data.empty()) return;
  if (secrets_.empty()) {
    sink_(data);
    return;
  }
  pending_.append(data);
  drain(false);
}

void StreamingRedactor::flush() { drain(true); }

void StreamingRedactor::drain(bool at_end) {
  out_.clear();
  const std::string_view buf = pending_;
  std::size_t i = 0;
  while (i < buf.size()) {
    if (!first_byte_[static_cast<unsigned char>(buf[i])]) {
      out_ += buf[i++];
      continue;
    }
    const std::string_view rest = buf.substr(i);
    const std::string* hit = nullptr;
    bool undecided = false;
    for (const std::string& s : secrets_) {  // longest first
      if (rest.size() >= s.size()) {
        if (hit == nullptr && rest.compare(0, s.size(), s) == 0) hit = &s;
      } else if (!at_end && s.compare(0, rest.size(), rest) == 0) {
        // rest is a proper prefix of a longer secret: more bytes could still complete it.
        undecided = true;
        break;
      }
    }
    if (undecided) break;
    if (hit != nullptr) {
      out_ += kRedacted;
      i += hit->size();
    } else {
      out_ += buf[i++];
    }
  }
  pending_.erase(0, i);
  if (!out_.empty()) sink_(out_);
}

}  // namespace kakeya::runner
