#include "runner/job_output.h"

namespace kakeya::runner {

Result<std::unique_ptr<JobOutput>> JobOutput::create(const std::filesystem::path& dir, std::size_t cap_bytes,
                                                     const std::vector<std::string>& secrets) {
  std::unique_ptr<JobOutput> o(new JobOutput());
  KAKEYA_ASSIGN_OR_RETURN(auto combined, JobLog::create(dir / kCombinedFile, cap_bytes, secrets));
  o->combined_ = std::make_unique<JobLog>(std::move(combined));
  JobOutput* raw = o.get();
  KAKEYA_ASSIGN_OR_RETURN(auto out, JobLog::create(dir / kStdoutFile, cap_bytes, secrets,
                                                   [raw](std::string_view d) { raw->interleave(1, d); }));
  o->out_ = std::make_unique<JobLog>(std::move(out));
  KAKEYA_ASSIGN_OR_RETURN(auto err, JobLog::create(dir / kStderrFile, cap_bytes, secrets,
                                                   [raw](std::string_view d) { raw->interleave(2, d); }));
  o->err_ = std::make_unique<JobLog>(std::move(err));
  return o;
}

JobOutput::~JobOutput() { close(); }

void JobOutput::write(int stream, std::string_view data) { (stream == 2 ? err_ : out_)->write(data); }

void JobOutput::emit(int stream, std::string_view line) {
  if (line.empty()) return;
  if (stream != last_stream_ && last_byte_ != '\n') combined_->write("\n");
  combined_->write(line);
  last_stream_ = stream;
  last_byte_ = line.back();
}

void JobOutput::interleave(int stream, std::string_view data) {
  std::lock_guard<std::mutex> lock(mu_);
  std::string& held = held_[stream];
  held.append(data);
  const std::size_t end = held.find_last_of("\r\n");
  if (end != std::string::npos) {
    emit(stream, std::string_view(held).substr(0, end + 1));
    held.erase(0, end + 1);
  }
  // Filtered chunks hold whole characters, so the held bytes can be cut here.
  if (held.size() > kMaxHeldLineBytes) {
    emit(stream, held);
    held.clear();
  }
}

void JobOutput::close() {
  if (closed_) return;
  closed_ = true;
  out_->close();  // flushes the redactors: the last bytes reach interleave()
  err_->close();
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (int stream : {1, 2}) {
      emit(stream, held_[stream]);
      held_[stream].clear();
    }
  }
  combined_->close();
}

}  // namespace kakeya::runner
