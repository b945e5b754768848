#include "bridge/credentials.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>

namespace kakeya::bridge {
namespace {

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::string(v) : std::string();
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string percent_decode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      int hi = hex_value(s[i + 1]);
      int lo = hex_value(s[i + 2]);
      if (hi >= 0 && lo >= 0) {
        out.push_back(static_cast<char>(hi * 16 + lo));
        i += 2;
        continue;
      }
    }
    out.push_back(s[i]);
  }
  return out;
}

std::string rstrip(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  return s;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// Appends the ssh key (when one is set) to the source description.
Credentials with_source(Credentials c, std::string source) {
  c.source = std::move(source);
  if (!c.ssh_private_key.empty()) c.source += ", ssh key " + c.ssh_private_key;
  return c;
}

void fill_independent_fields(Credentials& c) {
  std::string key = env_or_empty("KAKEYA_GIT_SSH_KEY");
  if (!key.empty()) {
    c.ssh_private_key = key;
    std::error_code ec;
    if (std::filesystem::exists(key + ".pub", ec)) c.ssh_public_key = key + ".pub";
  }
  c.ssh_passphrase = env_or_empty("KAKEYA_GIT_SSH_PASSPHRASE");
  c.ca_bundle = env_or_empty("KAKEYA_GIT_CA_BUNDLE");
  c.ssh_known_hosts = env_or_empty("KAKEYA_GIT_SSH_KNOWN_HOSTS");
  if (c.ssh_known_hosts.empty()) {
    const std::string home = env_or_empty("HOME");
    if (!home.empty()) c.ssh_known_hosts = home + "/.ssh/known_hosts";
  }
}

}  // namespace

Result<UrlParts> parse_url(const std::string& url) {
  UrlParts p;
  std::string_view rest(url);
  size_t scheme_end = rest.find("://");
  if (scheme_end != std::string_view::npos) {
    p.scheme = lower(std::string(rest.substr(0, scheme_end)));
    rest.remove_prefix(scheme_end + 3);
    size_t slash = rest.find('/');
    std::string_view authority = rest.substr(0, slash);
    size_t at = authority.rfind('@');
    if (at != std::string_view::npos) {
      std::string_view userinfo = authority.substr(0, at);
      authority.remove_prefix(at + 1);
      size_t colon = userinfo.find(':');
      p.username = percent_decode(userinfo.substr(0, colon));
      if (colon != std::string_view::npos) p.password = percent_decode(userinfo.substr(colon + 1));
    }
    p.host = lower(std::string(authority));
  } else {
    // scp-like: [user@]host:path
    size_t colon = rest.find(':');
    if (colon == std::string_view::npos) {
      return make_error(errc::kBadRemoteUrl, "remote URL '" + redact_url(url) + "' has no scheme and no host");
    }
    std::string_view authority = rest.substr(0, colon);
    size_t at = authority.rfind('@');
    if (at != std::string_view::npos) {
      p.username = std::string(authority.substr(0, at));
      authority.remove_prefix(at + 1);
    }
    p.host = lower(std::string(authority));
  }
  if (p.host.empty()) {
    return make_error(errc::kBadRemoteUrl, "remote URL '" + redact_url(url) + "' has an empty host");
  }
  return p;
}

std::string redact_url(const std::string& url) {
  size_t scheme_end = url.find("://");
  if (scheme_end == std::string::npos) return url;
  size_t auth_begin = scheme_end + 3;
  size_t slash = url.find('/', auth_begin);
  size_t at = url.rfind('@', slash == std::string::npos ? std::string::npos : slash);
  if (at == std::string::npos || at < auth_begin) return url;
  return url.substr(0, auth_begin) + url.substr(at + 1);
}

Result<Credentials> load_credentials(const std::string& remote_url,
                                     const std::optional<std::filesystem::path>& credentials_file) {
  Credentials c;
  fill_independent_fields(c);
  if (auto url = parse_url(remote_url); url.ok() && !url->password.empty()) {
    return make_error(errc::kCredentialsInUrl,
                      "remote URL '" + redact_url(remote_url) +
                          "' embeds a password or token (user:secret@), which would be written to logs and "
                          "caches: remove it from the URL; " +
                          credential_sources_help(remote_url, "a credentials file"));
  }

  std::string token = env_or_empty("KAKEYA_GIT_TOKEN");
  std::string token_file = env_or_empty("KAKEYA_GIT_TOKEN_FILE");
  if (!token.empty() && !token_file.empty()) {
    return make_error(errc::kCredentialsConflict,
                      "both KAKEYA_GIT_TOKEN and KAKEYA_GIT_TOKEN_FILE are set; set only one");
  }
  if (!token_file.empty()) {
    std::ifstream in(token_file);
    if (!in) return make_error(errc::kCredentialsFile, "cannot read KAKEYA_GIT_TOKEN_FILE '" + token_file + "'");
    std::getline(in, token);
    token = rstrip(token);
    if (token.empty()) {
      return make_error(errc::kCredentialsFile, "KAKEYA_GIT_TOKEN_FILE '" + token_file + "' line 1 is empty");
    }
  }
  if (!token.empty()) {
    c.token = token;
    c.username = env_or_empty("KAKEYA_GIT_USERNAME");
    if (c.username.empty()) c.username = "x-access-token";
    return with_source(std::move(c), token_file.empty() ? "KAKEYA_GIT_TOKEN" : "KAKEYA_GIT_TOKEN_FILE (" + token_file + ")");
  }

  if (!credentials_file) return with_source(std::move(c), "none (anonymous)");

  KAKEYA_ASSIGN_OR_RETURN(UrlParts remote, parse_url(remote_url));
  const std::string file = credentials_file->string();
  std::ifstream in(*credentials_file);
  if (!in) return make_error(errc::kCredentialsFile, "cannot read credentials file '" + file + "'");
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    line = rstrip(line);
    size_t first = line.find_first_not_of(" \t");
    if (first == std::string::npos || line[first] == '#') continue;
    line = line.substr(first);
    const std::string where = "credentials file '" + file + "' line " + std::to_string(line_no);
    if (line.find("://") == std::string::npos) {
      return make_error(errc::kBadCredentialsLine, where + ": expected scheme://user:token@host");
    }
    auto parsed = parse_url(line);
    if (!parsed.ok() || parsed->username.empty() || parsed->password.empty()) {
      return make_error(errc::kBadCredentialsLine, where + ": expected scheme://user:token@host");
    }
    if (parsed->scheme == remote.scheme && parsed->host == remote.host) {
      c.username = parsed->username;
      c.token = parsed->password;
      return with_source(std::move(c), "credentials file " + file + " line " + std::to_string(line_no));
    }
  }
  return make_error(errc::kCredentialsNotFound, "credentials file '" + file + "' has no entry for " +
                                                 remote.scheme + "://" + remote.host);
}

}  // namespace kakeya::bridge

namespace kakeya::bridge {

std::string credential_sources_help(const std::string& remote_url, const std::string& file_option) {
  auto url = parse_url(remote_url);
  const std::string scheme = url.ok() ? url->scheme : "";
  if (scheme == "ssh" || scheme.empty()) {
    return "ssh credentials come from KAKEYA_GIT_SSH_KEY (a private key file; <key>.pub beside it is used when "
           "present) and KAKEYA_GIT_SSH_PASSPHRASE";
  }
  if (scheme == "git") return "git:// remotes take no credentials (use https:// or ssh:// for an authenticated remote)";
  const std::string host = url.ok() ? url->host : "HOST";
  return "credentials come from KAKEYA_GIT_TOKEN or KAKEYA_GIT_TOKEN_FILE (a file holding the token), with "
         "KAKEYA_GIT_USERNAME (default x-access-token), else from " + file_option + " with a line " + scheme +
         "://USER:TOKEN@" + host;
}

Error explain_auth_failure(const Error& error, const std::string& remote_url, const Credentials& used,
                           const std::string& file_option) {
  if (error.code != errc::kAuthFailed) return error;
  const std::string sent = used.source.empty() || used.source.starts_with("none")
                               ? "no credentials were configured"
                               : "it refused the credentials from " + used.source;
  return make_error(errc::kAuthFailed, "authentication to " + redact_url(remote_url) + " failed: " + sent + "; " +
                                           credential_sources_help(remote_url, file_option));
}

}  // namespace kakeya::bridge
