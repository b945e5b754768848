#pragma once
// The closed set of error codes (Error::code, bridge/result.h), LevelDB's Status::Code habit:
// every code is listed below once, with what it means. Code compares against the constants of
// kakeya::errc (errc::kBadValue); the strings are what goes on the wire (the CLI's error line and
// JSON, rejection reasons) and keep their meaning.
//
// An ErrorCode can only hold a name from this list: a constant, or a string literal that the
// compiler checks against the list (the constructor is consteval), so a misspelt code, a
// synonym of an existing one or a new code is a build error until it is added here.
// Synonyms are merged: one code per meaning (io, not io_error/spool_io/cache_dir; out_of_range,
// not out_of_bounds; parse_error, not bad_json).

#include <cstddef>
#include <iterator>
#include <optional>
#include <ostream>
#include <string_view>

namespace kakeya {

// X(constant, wire name, meaning)
#define KAKEYA_ERROR_CODES(X)                                                                        \
  /* reading and writing: files, documents, values */                                             \
  X(kIo, "io", "a file, directory, pipe or process could not be read, written or created")        \
  X(kTooLarge, "too_large", "above a size limit, checked before parsing")                          \
  X(kTooDeep, "too_deep", "nested deeper than the limit")                                          \
  X(kParseError, "parse_error", "not YAML or not JSON at all (syntax, encoding)")                  \
  X(kUnknownKey, "unknown_key", "a key the format does not declare")                               \
  X(kDuplicateKey, "duplicate_key", "a key given twice in one mapping or object")                 \
  X(kMissingKey, "missing_key", "a required key is absent")                                        \
  X(kBadType, "bad_type", "right key, wrong type")                                                 \
  X(kOutOfRange, "out_of_range", "a number or size outside its bounds")                            \
  X(kBadValue, "bad_value", "right type, invalid value")                                           \
  X(kSchemaViolation, "schema_violation", "a document fails its manifests/schemas/ schema")        \
  X(kBadDuration, "bad_duration", "not a duration with a unit (30m, 7d)")                          \
  X(kBadPattern, "bad_pattern", "a regular expression that does not compile")                      \
  X(kPatternLimit, "pattern_limit", "a match ran out of its step or memory budget")                \
  X(kInternal, "internal", "an exception was caught at a wall; a bug")                             \
  /* the preset catalog and request parameters */                                                 \
  X(kBadPlaceholder, "bad_placeholder", "an argv token that is not a whole known placeholder")     \
  X(kUnknownPreset, "unknown_preset", "no such preset in the catalog")                             \
  X(kUnknownParam, "unknown_param", "no such parameter of the preset")                             \
  X(kMissingParam, "missing_param", "a required parameter is absent")                              \
  X(kDuplicateParam, "duplicate_param", "a parameter given twice on the command line")             \
  X(kBadParam, "bad_param", "a command-line parameter that cannot be parsed or is out of bounds")  \
  X(kMissingEnv, "missing_env", "an environment variable a preset needs is not set")               \
  X(kMissingModel, "missing_model", "a model role a preset needs is not configured")               \
  X(kMissingOutDir, "missing_out_dir", "${OUT} without an output directory")                       \
  /* the git bus: names, state, objects */                                                         \
  X(kBadBranch, "bad_branch", "not a request branch name")                                         \
  X(kBranchMismatch, "branch_mismatch", "the branch name does not match the manifest")             \
  X(kBadPrefix, "bad_prefix", "not a request branch prefix")                                      \
  X(kBadSuffix, "bad_suffix", "not a request branch suffix")                                       \
  X(kBadRef, "bad_ref", "not a ref name")                                                          \
  X(kBadOid, "bad_oid", "not an object id")                                                        \
  X(kBadPath, "bad_path", "a tree path that is not allowed or names the wrong kind of entry")      \
  X(kBadTree, "bad_tree", "a tree object that is not well-formed")                                 \
  X(kPathConflict, "path_conflict", "a file where a directory is needed, or the reverse")          \
  X(kPathEscape, "path_escape", "a path that would leave its destination directory")               \
  X(kBadAuthor, "bad_author", "a commit identity git refuses")                                     \
  X(kBadState, "bad_state", "not a valid state for the operation or the object")                   \
  X(kBadStatus, "bad_status", "a branch's status.json cannot be read")                             \
  X(kBadTransition, "bad_transition", "a run-state change the state machine does not allow")       \
  X(kNotFetched, "not_fetched", "an object that is not in the local cache")                        \
  X(kRefGone, "ref_gone", "the request branch no longer exists")                                   \
  X(kBranchExists, "branch_exists", "a create-only push found the branch already there")           \
  X(kNonFastForward, "non_fast_forward", "a push that would not fast-forward")                     \
  X(kPushRejected, "push_rejected", "the remote refused a push")                                   \
  X(kDeleteFailed, "delete_failed", "a branch could not be deleted")                               \
  X(kBeatLost, "beat_lost", "a runner heartbeat lost its compare-and-swap")                        \
  X(kCancelLost, "cancel_lost", "a cancel lost its compare-and-swap")                              \
  X(kImportFailed, "import_failed", "objects could not be copied into the cache")                  \
  X(kRepository, "repository", "a libgit2 repository operation failed")                            \
  X(kNoRepository, "no_repository", "not inside a git repository")                                 \
  X(kNoHeadCommit, "no_head_commit", "the repository has no commit at HEAD")                       \
  X(kNothingToFetch, "nothing_to_fetch", "the commit has no .kakeya/run/")                         \
  X(kChildFailed, "child_failed", "a child process (git, the engine) failed or exited non-zero")     \
  X(kServerStart, "server_start", "a local server process did not start (test harness)")           \
  /* the network and credentials */                                                                \
  X(kAuthFailed, "auth_failed", "the remote refused the credentials")                              \
  X(kTransport, "transport", "the remote could not be reached or the connection failed")          \
  X(kTimeout, "timeout", "a network operation passed its deadline")                                \
  X(kBadRemoteUrl, "bad_remote_url", "not a usable remote URL")                                    \
  X(kCredentialsFile, "credentials_file", "the credentials file cannot be used")                   \
  X(kCredentialsNotFound, "credentials_not_found", "no credentials for the remote")                \
  X(kCredentialsConflict, "credentials_conflict", "two sources of credentials disagree")           \
  X(kBadCredentialsLine, "bad_credentials_line", "a credentials file line that cannot be parsed") \
  X(kCredentialsInUrl, "credentials_in_url", "a remote URL that embeds a password or token")       \
  X(kHostKeyUnknown, "host_key_unknown", "the SSH server's host key is not in known_hosts")          \
  X(kHostKeyMismatch, "host_key_mismatch", "the SSH server's host key differs from known_hosts, or is revoked") \
  /* provenance: SSH keys and signatures */                                                        \
  X(kBadKey, "bad_key", "an SSH key, signature or allowed-signers line that cannot be parsed or used") \
  X(kNotSigned, "not_signed", "a commit that must be signed carries no signature")                 \
  X(kBadSignature, "bad_signature", "a signature that does not verify over what it claims to sign") \
  X(kUntrustedSigner, "untrusted_signer", "a good signature by a key the allowed-signers file does not allow") \
  X(kUnauthorisedSigner, "unauthorised_signer", "an allowed signer who may not run the requested preset") \
  X(kTampered, "tampered", "run files changed by a commit no runner signed")                       \
  /* the client */                                                                                 \
  X(kUsage, "usage", "a command line that cannot be parsed")                                       \
  X(kNoRemote, "no_remote", "no remote configured")                                                \
  X(kNoCatalog, "no_catalog", "no preset catalog found")                                           \
  X(kNoCacheDir, "no_cache_dir", "no directory for the client's cache")                            \
  X(kNotFound, "not_found", "a branch, file, program or model that does not exist")                \
  X(kAmbiguous, "ambiguous", "a name that matches more than one thing")                            \
  /* the engine */                                                                                 \
  X(kBackendUnavailable, "backend_unavailable", "the requested compute backend cannot run here")  \
  X(kBadHparams, "bad_hparams", "model hyperparameters that are missing or inconsistent")          \
  X(kBadShape, "bad_shape", "a tensor of the wrong shape")                                         \
  X(kBadToken, "bad_token", "a token id outside the vocabulary")                                   \
  X(kBadVocab, "bad_vocab", "a tokenizer vocabulary that cannot be used")                          \
  X(kBadPretokenizer, "bad_pretokenizer", "a pre-tokenizer that cannot be used")                   \
  X(kUnknownPretokenizer, "unknown_pretokenizer", "a pre-tokenizer name that is not known")        \
  X(kUnsupportedTokenizer, "unsupported_tokenizer", "a tokenizer model that is not supported")     \
  X(kNoChatTemplate, "no_chat_template", "the model has no chat template")                         \
  X(kUnknownChatTemplate, "unknown_chat_template", "a chat template that is not recognised")       \
  X(kUnsupportedChatTemplate, "unsupported_chat_template", "a chat template that is not supported") \
  X(kContextOverflow, "context_overflow", "more tokens than the context holds")                    \
  X(kEmptyInput, "empty_input", "no tokens where some are needed")                                 \
  X(kEvicted, "evicted", "a KV position that the cache policy evicted")                            \
  X(kGgufFormat, "gguf_format", "not a GGUF file")                                                 \
  X(kGgufTruncated, "gguf_truncated", "a GGUF file shorter than its contents")                     \
  X(kGgufVersion, "gguf_version", "a GGUF version that is not supported")                          \
  X(kMissingTensor, "missing_tensor", "a tensor the architecture needs is absent")                 \
  X(kOutOfMemory, "out_of_memory", "an allocation failed")                                         \
  X(kTypeMismatch, "type_mismatch", "a GGUF value of another type than asked for")                 \
  X(kUnsupportedArchitecture, "unsupported_architecture", "a model architecture that is not supported") \
  X(kUnsupportedType, "unsupported_type", "a tensor type that is not supported")                   \
  X(kVocabMismatch, "vocab_mismatch", "draft and target models do not share a vocabulary")

namespace error_code_detail {
#define KAKEYA_ERROR_CODE_NAME(constant, name, meaning) name,
inline constexpr const char* kNames[] = {KAKEYA_ERROR_CODES(KAKEYA_ERROR_CODE_NAME)};
#undef KAKEYA_ERROR_CODE_NAME
}  // namespace error_code_detail

class ErrorCode {
 public:
  // Only a name from the list: checked at compile time (a name not listed is a build error).
  consteval ErrorCode(const char* name) : name_(listed(name)) {}  // NOLINT: implicit by design

  constexpr std::string_view str() const { return name_; }
  constexpr const char* c_str() const { return name_; }

  // The code named `text` (e.g. read back from JSON output), or nullopt when it is not listed.
  static constexpr std::optional<ErrorCode> from_string(std::string_view text) {
    for (const char* name : error_code_detail::kNames) {
      if (text == name) return ErrorCode(Listed{name});
    }
    return std::nullopt;
  }

  friend constexpr bool operator==(ErrorCode a, ErrorCode b) { return a.str() == b.str(); }
  // Comparison with a wire string, e.g. a code read back from a process's output.
  friend constexpr bool operator==(ErrorCode a, std::string_view b) { return a.str() == b; }
  friend constexpr bool operator==(ErrorCode a, const char* b) { return a.str() == b; }
  friend std::ostream& operator<<(std::ostream& os, ErrorCode code) { return os << code.str(); }

 private:
  struct Listed {
    const char* name;
  };
  constexpr explicit ErrorCode(Listed listed) : name_(listed.name) {}

  static consteval const char* listed(const char* name) {
    for (const char* listed_name : error_code_detail::kNames) {
      if (std::string_view(name) == listed_name) return listed_name;
    }
    throw "not an error code of bridge/error_codes.h";  // in a consteval call: a build error
  }

  const char* name_;
};

// Every code, in the order of the list.
inline constexpr std::size_t kErrorCodeCount = std::size(error_code_detail::kNames);

namespace errc {
#define KAKEYA_ERROR_CODE_CONSTANT(constant, name, meaning) inline constexpr ErrorCode constant{name};
KAKEYA_ERROR_CODES(KAKEYA_ERROR_CODE_CONSTANT)
#undef KAKEYA_ERROR_CODE_CONSTANT
}  // namespace errc

}  // namespace kakeya
