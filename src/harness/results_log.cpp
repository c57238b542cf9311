#include "harness/results_log.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sstream>

#include "core/error.h"
#include "core/paths.h"
#include "core/text.h"

namespace ak {
namespace {

class LockedFile {
 public:
  explicit LockedFile(const std::filesystem::path& path) {
    fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd_ < 0) throw Error(ErrorKind::Io, "cannot open " + path.string() + ": " + std::strerror(errno));
    ::flock(fd_, LOCK_EX);
  }
  ~LockedFile() {
    ::flock(fd_, LOCK_UN);
    ::close(fd_);
  }
  LockedFile(const LockedFile&) = delete;
  LockedFile& operator=(const LockedFile&) = delete;
  bool empty() const { return ::lseek(fd_, 0, SEEK_END) == 0; }
  void write(const std::string& text) {
    if (::write(fd_, text.data(), text.size()) != static_cast<ssize_t>(text.size()))
      throw Error(ErrorKind::Io, std::string("cannot append to results: ") + std::strerror(errno));
  }

 private:
  int fd_ = -1;
};

}  // namespace

// first_worker and first_us held a keep's figure on another worker than the best's before it was
// measured again on the best's; a keep is now confirmed beside the best on its own worker. The
// columns stay, empty, so that a results.tsv begun before lines up with the rows added to it.
constexpr const char* kNoLongerWritten = "\t\t";

std::string results_header() {
  return "timestamp\tcommand\top\tkernel\tconfig\tbackend\tdevice\tdtype\tshape\tstatus\tstage\treason\t"
         "median_us\tnoise\tsamples\tgbps\ttflops\troofline\texperiment\tname\tdecision\tcommit\telapsed_s\t"
         "spread\tphases\tworker\tfirst_worker\tfirst_us\tbest_again_us\tagain_us\n";
}

void append_result(const std::filesystem::path& tsv, const ResultRow& row) {
  if (tsv.has_parent_path()) std::filesystem::create_directories(tsv.parent_path());
  const ExperimentRequest& q = *row.request;
  const ExperimentResult& r = *row.result;
  std::ostringstream line;
  // Every text field printable(): a tab or newline would break the table, and a terminal's escape
  // would let a field (an agent's words, a kernel's output) redraw the rows shown around it.
  line << utc_timestamp() << '\t' << row.command << '\t' << q.op << '\t' << printable(row.kernel) << '\t'
       << printable(row.config) << '\t' << to_string(q.backend) << '\t' << printable(row.device) << '\t'
       << to_string(q.dtype) << '\t' << q.problem.to_string() << '\t' << to_string(r.status) << '\t'
       << r.stage << '\t' << printable(r.reason.substr(0, 400)) << '\t' << r.timing.median_us << '\t'
       << r.timing.noise << '\t' << r.timing.samples << '\t' << r.gbps << '\t' << r.tflops << '\t'
       << r.roofline << '\t' << row.experiment << '\t' << printable(row.name) << '\t' << row.decision << '\t'
       << row.commit << '\t' << row.elapsed_s << '\t' << r.timing.spread << '\t' << phase_seconds(r) << '\t'
       << printable(row.worker) << '\t' << kNoLongerWritten << row.best_again_us << '\t' << row.again_us
       << '\n';
  LockedFile file(tsv);
  if (file.empty()) file.write(results_header());
  file.write(line.str());
}

std::vector<ResultRecord> read_results(const std::filesystem::path& tsv) {
  std::vector<ResultRecord> rows;
  if (!std::filesystem::exists(tsv)) return rows;
  const std::string text = read_text_file(tsv);
  std::vector<std::string> header, current;
  {
    std::istringstream names(results_header());
    for (std::string name; std::getline(names, name, '\t');) {
      if (!name.empty() && name.back() == '\n') name.pop_back();
      current.push_back(name);
    }
  }
  size_t begin = 0;
  while (begin < text.size()) {
    const size_t end = text.find('\n', begin);
    if (end == std::string::npos) break;  // a torn last line
    std::vector<std::string> fields;
    std::string field;
    std::istringstream line(text.substr(begin, end - begin));
    while (std::getline(line, field, '\t')) fields.push_back(field);
    if (text.substr(begin, end - begin).ends_with('\t')) fields.emplace_back();
    begin = end + 1;
    if (header.empty()) {
      header = std::move(fields);
      continue;
    }
    // Columns added since the file was started come last: its older header is a prefix of ours.
    if (fields.size() > header.size() && current.size() >= fields.size() &&
        std::equal(header.begin(), header.end(), current.begin()))
      header.assign(current.begin(), current.begin() + static_cast<std::ptrdiff_t>(fields.size()));
    if (fields.size() != header.size()) continue;
    ResultRecord record;
    for (size_t i = 0; i < header.size(); ++i) record[header[i]] = fields[i];
    rows.push_back(std::move(record));
  }
  return rows;
}

}  // namespace ak
