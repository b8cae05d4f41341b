#include "driver/output_writer.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
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

/// Moves the temporary file `tmp` to `path`. With `never_overwrite`, fails
/// when `path` has appeared meanwhile (link(2) does not replace a file).
bool commit_file(const std::string& tmp, const std::string& path, bool never_overwrite, std::string* error) {
  if (never_overwrite) {
    if (::link(tmp.c_str(), path.c_str()) != 0) {
      *error = std::strerror(errno);
      return false;
    }
    std::remove(tmp.c_str());
    return true;
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) {
    *error = ec.message();
    return false;
  }
  return true;
}

}  // namespace

WriteReport write_if_changed(const std::string& path, const std::string& content) {
  WriteReport r{path, WriteStatus::Failed, {}};
  std::string existing;
  if (read_all(path, &existing) && existing == content) {
    r.status = WriteStatus::Unchanged;
    return r;
  }
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  if (!write_file(tmp, content, &r.error)) return r;
  if (!commit_file(tmp, path, /*never_overwrite=*/false, &r.error)) {
    std::remove(tmp.c_str());
    return r;
  }
  r.status = WriteStatus::Written;
  return r;
}

// Two phases, so that a run either updates every changed output or none: all
// changed contents are first written to temporary files beside their
// targets; only when every one of them succeeded are they renamed into place.
// (A rename within one folder does not fail for lack of space, so a failure
// after that point would need another process to interfere.)
std::vector<WriteReport> write_outputs(const std::vector<OutputFile>& files, const std::string& out_dir) {
  std::vector<WriteReport> reports;
  std::vector<std::string> staged(files.size());  // temp file per output, or empty
  std::error_code ec;
  if (!out_dir.empty()) fs::create_directories(out_dir, ec);
  bool failed = false;
  for (size_t i = 0; i < files.size(); ++i) {
    const OutputFile& f = files[i];
    std::string path = (fs::path(out_dir.empty() ? "." : out_dir) / f.name).string();
    reports.push_back({path, WriteStatus::Failed, {}});
    WriteReport& r = reports.back();
    if (fs::is_directory(path, ec)) {
      r.error = "a folder of that name is in the way";
      failed = true;
      continue;
    }
    if (f.never_overwrite && fs::exists(path, ec)) {
      r.status = WriteStatus::KeptExisting;
      continue;
    }
    std::string existing;
    if (read_all(path, &existing) && existing == f.content) {
      r.status = WriteStatus::Unchanged;
      continue;
    }
    std::string tmp = path + ".tmp." + std::to_string(::getpid());
    if (!write_file(tmp, f.content, &r.error)) {
      failed = true;
      continue;
    }
    staged[i] = tmp;
  }
  for (size_t i = 0; i < files.size(); ++i) {
    if (staged[i].empty()) continue;
    WriteReport& r = reports[i];
    if (failed) {
      std::remove(staged[i].c_str());
      r.status = WriteStatus::NotWritten;
    } else if (!commit_file(staged[i], r.path, files[i].never_overwrite, &r.error)) {
      std::remove(staged[i].c_str());
    } else {
      r.status = WriteStatus::Written;
    }
  }
  return reports;
}

std::string make_depfile(const std::vector<std::string>& targets, const std::vector<std::string>& inputs) {
  std::string out;
  for (size_t i = 0; i < targets.size(); ++i) out += (i ? " " : "") + escape_make(targets[i]);
  out += ":";
  for (const auto& in : inputs) out += " " + escape_make(in);
  out += "\n";
  return out;
}

}  // namespace structop
