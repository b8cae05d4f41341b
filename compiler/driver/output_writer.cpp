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

}  // namespace

WriteReport write_if_changed(const std::string& path, const std::string& content) {
  WriteReport r{path, WriteStatus::Failed, {}};
  std::string existing;
  if (read_all(path, &existing) && existing == content) {
    r.status = WriteStatus::Unchanged;
    return r;
  }
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) {
      r.error = std::strerror(errno);
      return r;
    }
    out << content;
    out.close();
    if (!out) {
      r.error = "write failed";
      std::remove(tmp.c_str());
      return r;
    }
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) {
    r.error = ec.message();
    std::remove(tmp.c_str());
    return r;
  }
  r.status = WriteStatus::Written;
  return r;
}

std::vector<WriteReport> write_outputs(const std::vector<OutputFile>& files, const std::string& out_dir) {
  std::vector<WriteReport> reports;
  std::error_code ec;
  if (!out_dir.empty()) fs::create_directories(out_dir, ec);
  for (const auto& f : files) {
    std::string path = (fs::path(out_dir.empty() ? "." : out_dir) / f.name).string();
    if (f.never_overwrite && fs::exists(path, ec)) {
      reports.push_back({path, WriteStatus::KeptExisting, {}});
      continue;
    }
    reports.push_back(write_if_changed(path, f.content));
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
