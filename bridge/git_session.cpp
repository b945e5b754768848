#include "bridge/git_session.h"

#include "bridge/credentials.h"
#include "bridge/known_hosts.h"
#include "bridge/ssh_key.h"

namespace kakeya::bridge {

RemoteSession::RemoteSession(const Credentials& creds, const GitBusOptions& opts, std::string redacted_url)
    : creds_(creds), opts_(opts), redacted_url_(std::move(redacted_url)) {
  deadline_ = std::chrono::steady_clock::now() + std::chrono::seconds(opts_.op_timeout_s);
  git_remote_init_callbacks(&callbacks_, GIT_REMOTE_CALLBACKS_VERSION);
  callbacks_.credentials = &RemoteSession::on_credentials;
  callbacks_.sideband_progress = &RemoteSession::on_sideband;
  callbacks_.transfer_progress = &RemoteSession::on_transfer;
  callbacks_.pack_progress = &RemoteSession::on_pack;
  callbacks_.push_transfer_progress = &RemoteSession::on_push_transfer;
  callbacks_.push_update_reference = &RemoteSession::on_push_update_reference;
  callbacks_.certificate_check = &RemoteSession::on_certificate_check;
  callbacks_.payload = this;
}

Result<std::unique_ptr<RemoteSession>> RemoteSession::connect(git_repository* repo, const std::string& url,
                                                              const Credentials& creds, const GitBusOptions& opts,
                                                              git_direction direction) {
  git::ensure_init();
  install_deadline_stream();
  std::unique_ptr<RemoteSession> s(new RemoteSession(creds, opts, redact_url(url)));
  s->net_deadline_.emplace(s->deadline_, &s->timed_out_);
  if (auto parts = parse_url(url); parts.ok()) {
    const std::size_t colon = parts->host.rfind(':');
    if (colon != std::string::npos && parts->host.find(']') == std::string::npos) {
      s->ssh_port_ = std::atoi(parts->host.c_str() + colon + 1);
    }
  }
  git_remote* raw = nullptr;
  if (git_remote_create_anonymous(&raw, repo, url.c_str()) != 0) {
    return git::last_error(errc::kTransport, "cannot create remote for " + s->redacted_url_);
  }
  s->remote_.reset(raw);
  s->start_watchdog();
  git_proxy_options proxy;
  git_proxy_options_init(&proxy, GIT_PROXY_OPTIONS_VERSION);
  if (git_remote_connect(s->remote_.get(), direction, &s->callbacks_, &proxy, nullptr) != 0) {
    return s->failure(errc::kTransport, "connect");
  }
  return s;
}

RemoteSession::~RemoteSession() {
  stop_watchdog();
  if (remote_ && git_remote_connected(remote_.get())) git_remote_disconnect(remote_.get());
}

void RemoteSession::start_watchdog() {
  watchdog_ = std::thread([this] {
    std::unique_lock<std::mutex> lock(mu_);
    if (!cv_.wait_until(lock, deadline_, [this] { return done_; })) {
      timed_out_ = true;
      git_remote_stop(remote_.get());
    }
  });
}

void RemoteSession::stop_watchdog() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    done_ = true;
  }
  cv_.notify_all();
  if (watchdog_.joinable()) watchdog_.join();
}

bool RemoteSession::deadline_passed() {
  if (std::chrono::steady_clock::now() >= deadline_) timed_out_ = true;
  return timed_out_;
}

Result<std::vector<RemoteRef>> RemoteSession::advertisement() {
  const git_remote_head** heads = nullptr;
  size_t n = 0;
  if (git_remote_ls(&heads, &n, remote_.get()) != 0) return failure(errc::kTransport, "list remote refs");
  std::vector<RemoteRef> out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) out.push_back(RemoteRef{heads[i]->name, git::to_hex(heads[i]->oid)});
  return out;
}

Error RemoteSession::failure(ErrorCode fallback_code, const std::string& what) const {
  if (host_key_error_) return make_error(host_key_error_->code, what + " on " + redacted_url_ + ": " + host_key_error_->message);
  if (auth_failed_) {
    return make_error(errc::kAuthFailed, "authentication to " + redacted_url_ + " failed (" + what + "): " + auth_detail_);
  }
  if (timed_out_) {
    return make_error(errc::kTimeout, what + " on " + redacted_url_ + " exceeded op_timeout_s=" +
                                     std::to_string(opts_.op_timeout_s));
  }
  return git::last_error(fallback_code, what + " on " + redacted_url_);
}

bool RemoteSession::transport_failed() const {
  if (auth_failed_ || timed_out_ || host_key_error_) return true;
  const git_error* e = git_error_last();
  if (e == nullptr) return false;
  switch (e->klass) {
    case GIT_ERROR_NET:
    case GIT_ERROR_SSL:
    case GIT_ERROR_HTTP:
    case GIT_ERROR_SSH:
    case GIT_ERROR_OS:
      return true;
    default:
      return false;
  }
}

int RemoteSession::check_deadline(void* payload) {
  auto* s = static_cast<RemoteSession*>(payload);
  if (s->deadline_passed()) {
    git_error_set_str(GIT_ERROR_NET, "kakeya git bus: operation deadline passed");
    return -1;
  }
  return 0;
}

int RemoteSession::on_credentials(git_credential** out, const char* /*url*/, const char* username_from_url,
                                  unsigned int allowed_types, void* payload) {
  auto* s = static_cast<RemoteSession*>(payload);
  if (check_deadline(payload) != 0) return -1;
  ++s->auth_attempts_;
  if (s->auth_attempts_ > s->opts_.max_auth_attempts) {
    s->auth_failed_ = true;
    s->auth_detail_ = "credentials rejected " + std::to_string(s->opts_.max_auth_attempts) +
                      " time(s) (max_auth_attempts)";
    git_error_set_str(GIT_ERROR_NET, s->auth_detail_.c_str());
    return GIT_EAUTH;
  }
  const Credentials& c = s->creds_;
  if ((allowed_types & GIT_CREDENTIAL_USERPASS_PLAINTEXT) != 0 && !c.token.empty()) {
    return git_credential_userpass_plaintext_new(out, c.username.c_str(), c.token.c_str());
  }
  std::string user = (username_from_url != nullptr && *username_from_url != '\0') ? username_from_url
                     : !c.username.empty()                                       ? c.username
                                                                                 : "git";
  if ((allowed_types & GIT_CREDENTIAL_SSH_KEY) != 0 && !c.ssh_private_key.empty()) {
    return git_credential_ssh_key_new(out, user.c_str(),
                                      c.ssh_public_key.empty() ? nullptr : c.ssh_public_key.c_str(),
                                      c.ssh_private_key.c_str(),
                                      c.ssh_passphrase.empty() ? nullptr : c.ssh_passphrase.c_str());
  }
  if ((allowed_types & GIT_CREDENTIAL_USERNAME) != 0) return git_credential_username_new(out, user.c_str());
  s->auth_failed_ = true;
  s->auth_detail_ = "the server asks for credentials (allowed types " + std::to_string(allowed_types) +
                    ") and none of that kind are configured";
  git_error_set_str(GIT_ERROR_NET, s->auth_detail_.c_str());
  return GIT_EAUTH;
}

int RemoteSession::on_sideband(const char*, int, void* payload) { return check_deadline(payload); }
int RemoteSession::on_transfer(const git_indexer_progress*, void* payload) { return check_deadline(payload); }
int RemoteSession::on_pack(int, uint32_t, uint32_t, void* payload) { return check_deadline(payload); }
int RemoteSession::on_push_transfer(unsigned int, unsigned int, size_t, void* payload) {
  return check_deadline(payload);
}

int RemoteSession::on_push_update_reference(const char* refname, const char* status, void* payload) {
  auto* s = static_cast<RemoteSession*>(payload);
  s->push_status_[refname] = status == nullptr ? std::nullopt : std::optional<std::string>(status);
  return 0;
}

int RemoteSession::on_certificate_check(git_cert* cert, int /*valid*/, const char* host, void* payload) {
  auto* s = static_cast<RemoteSession*>(payload);
  if (cert == nullptr || cert->cert_type != GIT_CERT_HOSTKEY_LIBSSH2) return GIT_PASSTHROUGH;
  const auto* hk = reinterpret_cast<const git_cert_hostkey*>(cert);
  const std::string name = host != nullptr ? host : "";
  auto refuse = [&](ErrorCode code, const std::string& why) {
    s->host_key_error_ = make_error(code, why);
    git_error_set_str(GIT_ERROR_SSH, why.c_str());
    return GIT_ECERTIFICATE;
  };
  if ((hk->type & GIT_CERT_SSH_RAW) == 0 || hk->hostkey == nullptr) {
    return refuse(errc::kHostKeyUnknown, "the SSH transport did not expose the host key of " + name +
                                             ", so it cannot be checked against known_hosts");
  }
  auto key = parse_public_key_blob(std::string_view(hk->hostkey, hk->hostkey_len));
  if (!key.ok()) return refuse(errc::kHostKeyUnknown, "the host key of " + name + " cannot be read: " + key.error().message);
  const std::string file = s->creds_.ssh_known_hosts;
  if (file.empty()) {
    return refuse(errc::kHostKeyUnknown, "no known_hosts file to check the host key of " + name +
                                             " (set KAKEYA_GIT_SSH_KNOWN_HOSTS or HOME)");
  }
  const HostKeyCheck check = check_known_host(file, name, s->ssh_port_, *key);
  switch (check.verdict) {
    case HostKeyVerdict::Known:
      return 0;
    case HostKeyVerdict::Unknown:
      return refuse(errc::kHostKeyUnknown, "host key not pinned: " + check.detail +
                                               "; add the server's key (ssh-keyscan, checked out of band) to " + file);
    case HostKeyVerdict::Changed:
      return refuse(errc::kHostKeyMismatch, "HOST KEY CHANGED, refusing to connect: " + check.detail);
    case HostKeyVerdict::Revoked:
      return refuse(errc::kHostKeyMismatch, "revoked host key, refusing to connect: " + check.detail);
  }
  return refuse(errc::kHostKeyUnknown, "host key of " + name + " not checked");
}

}  // namespace kakeya::bridge
