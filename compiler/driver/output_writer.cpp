#include "driver/output_writer.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include <unistd.h>

namespace structop {
namespace {

namespace fs = std::filesystem;

bool read_all(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream ss;
  ss << in.rdbuf();
  *out = std::move(ss).str();
  return true;
}

std::string escape_make(const std::string& path) {
  std::string out;
  for (char c : path) {
    if (c == ' ' || c == '#') out += '\\';
    if (c == '$') out += '$';
    out += c;
  }
  return out;
}

/// Writes `content` to `path` (truncating); on failure removes what was
/// written and sets `*error`.
bool write_file(const std::string& path, const std::string& content, std::string* error) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) {
    *error = std::strerror(errno);
    return false;
  }
  out << content;
  out.close();
  if (!out) {
    *error = "write failed (disk full?)";
    std::remove(path.c_str());
    return false;
  }
  return true;
}

/// Moves the temporary file `tmp` to `r->path` and marks the report Written;
/// on failure removes `tmp` and sets the error. With `never_overwrite`, fails
/// when the file has appeared meanwhile (link(2) does not replace a file).
void commit(const std::string& tmp, bool never_overwrite, WriteReport* r) {
  std::error_code ec;
  if (never_overwrite) {
    if (::link(tmp.c_str(), r->path.c_str()) != 0) ec.assign(errno, std::generic_category());
    std::remove(tmp.c_str());
  } else {
    fs::rename(tmp, r->path, ec);
    if (ec) std::remove(tmp.c_str());
  }
  if (ec) {
    r->error = ec.message();
  } else {
    r->status = WriteStatus::Written;
  }
}

/// The first phase for one output: decides Unchanged / KeptExisting, or
/// writes `content` to a temporary file beside `r->path` and returns its name
/// (nullopt and an error on failure).
std::optional<std::string> stage(const std::string& content, bool never_overwrite, WriteReport* r) {
  std::error_code ec;
  if (fs::is_directory(r->path, ec)) {
    r->error = "a folder of that name is in the way";
    return std::nullopt;
  }
  if (never_overwrite && fs::exists(r->path, ec)) {
    r->status = WriteStatus::KeptExisting;
    return std::nullopt;
  }
  std::string existing;
  if (read_all(r->path, &existing) && existing == content) {
    r->status = WriteStatus::Unchanged;
    return std::nullopt;
  }
  std::string tmp = r->path + ".tmp." + std::to_string(::getpid());
  if (!write_file(tmp, content, &r->error)) return std::nullopt;
  return tmp;
}

}  // namespace

WriteReport write_if_changed(const std::string& path, const std::string& content) {
  WriteReport r{path, WriteStatus::Failed, {}};
  if (auto tmp = stage(content, /*never_overwrite=*/false, &r)) commit(*tmp, false, &r);
  return r;
}

// Two phases, so that a run either updates every changed output or none: all
// changed contents are first written to temporary files beside their
// targets; only when every one of them succeeded are they renamed into place.
// (A rename within one folder does not fail for lack of space, so a failure
// after that point would need another process to interfere.)
std::vector<WriteReport> write_outputs(
    const std::vector<OutputFile>& files,
    const std::string& out_dir) {
  std::error_code ec;
  if (!out_dir.empty()) fs::create_directories(out_dir, ec);
  std::vector<WriteReport> reports;
  std::vector<std::optional<std::string>> staged;  // temp file per output
  for (const auto& f : files) {
    reports.push_back(
        {(fs::path(out_dir.empty() ? "." : out_dir) / f.name).string(), WriteStatus::Failed, {}});
    staged.push_back(stage(f.content, f.never_overwrite, &reports.back()));
  }
  bool failed = false;  // an output that was neither staged nor left alone
  for (size_t i = 0; i < files.size(); ++i)
    failed |= !staged[i] && reports[i].status == WriteStatus::Failed;
  for (size_t i = 0; i < files.size(); ++i) {
    if (!staged[i]) continue;
    if (failed) {
      std::remove(staged[i]->c_str());
      reports[i].status = WriteStatus::NotWritten;
    } else {
      commit(*staged[i], files[i].never_overwrite, &reports[i]);
    }
  }
  return reports;
}

std::string make_depfile(
    const std::vector<std::string>& targets,
    const std::vector<std::string>& inputs) {
  std::string out;
  for (size_t i = 0; i < targets.size(); ++i) out += (i ? " " : "") + escape_make(targets[i]);
  out += ":";
  for (const auto& in : inputs) out += " " + escape_make(in);
  out += "\n";
  return out;
}

}  // namespace structop
