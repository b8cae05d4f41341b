#include "load/idl_loader.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include "load/idl_reader.h"
#include "load/yaml_tree.h"

namespace structop {
namespace {

namespace fs = std::filesystem;

/// Includes may nest this deep (loading recurses once per level).
constexpr size_t kMaxIncludeDepth = 100;

/// What a path names, for "not a regular file" errors.
const char* file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "is a directory";
  if (S_ISFIFO(mode)) return "is a FIFO, not a regular file";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "is a device, not a regular file";
  if (S_ISSOCK(mode)) return "is a socket, not a regular file";
  return "is not a regular file";
}

class DiskReader : public FileReader {
 public:
  // Reads regular files only, and at most one byte more than an IDL file may
  // have (load_yaml reports it as too large), whatever the path names: a FIFO
  // does not block (O_NONBLOCK; checked on the opened file, so a symlink or a
  // rename in between cannot swap it) and /dev/zero is not read at all.
  std::optional<std::string> read(const std::string& path, std::string* error) override {
    int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
      *error = std::strerror(errno);
      return std::nullopt;
    }
    struct stat st{};
    const char* problem = nullptr;
    if (::fstat(fd, &st) != 0) {
      problem = std::strerror(errno);
    } else if (!S_ISREG(st.st_mode)) {
      problem = file_kind(st.st_mode);
    }
    if (problem) {
      *error = problem;
      ::close(fd);
      return std::nullopt;
    }
    const size_t limit = YamlLimits().max_bytes + 1;
    std::string text;
    text.resize(std::min<uint64_t>(static_cast<uint64_t>(st.st_size), limit));
    size_t size = 0;
    while (size < limit) {
      if (size == text.size()) text.resize(std::min(limit, text.size() * 2 + 4096));  // it grew
      ssize_t n = ::read(fd, text.data() + size, text.size() - size);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        *error = std::strerror(errno);
        ::close(fd);
        return std::nullopt;
      }
      if (n == 0) break;
      size += static_cast<size_t>(n);
    }
    ::close(fd);
    text.resize(size);
    return text;
  }

  std::string identity(const std::string& path) override {
    std::error_code ec;
    fs::path p = fs::weakly_canonical(path, ec);
    return ec ? fs::path(path).lexically_normal().string() : p.string();
  }

  // Anything but a folder: read() then says why a FIFO or a device is no IDL
  // file, rather than the search saying it found nothing.
  bool exists(const std::string& path) override {
    std::error_code ec;
    fs::file_status st = fs::status(path, ec);
    return !ec && fs::exists(st) && !fs::is_directory(st);
  }
};

class Loader {
 public:
  Loader(
      const std::vector<std::string>& include_dirs,
      FileReader& reader,
      SourceManager& sources,
      Diagnostics& diags)
      : include_dirs_(include_dirs), reader_(reader), sources_(sources), diags_(diags) {}

  LoadedIdl run(const std::string& main_path) {
    std::string error;
    auto text = reader_.read(main_path, &error);
    if (!text) {
      int id = sources_.add(main_path, "", reader_.display_path(main_path));
      diags_.error(Span{id, 0, 0, 1}, fmt::format("cannot read file: {}", error));
      return {};
    }
    load_file(main_path, std::move(*text), Span{});
    return std::move(result_);
  }

 private:
  // Loads one file (text already read) and, first, what it includes.
  void load_file(const std::string& path, std::string text, Span included_from) {
    std::string key = reader_.identity(path);
    state_[key] = State::InProgress;
    stack_.push_back({key, path, included_from});
    result_.paths.push_back(path);

    int id = sources_.add(path, std::move(text), reader_.display_path(path));
    YamlDocument doc;
    syntax::IdlFile file;
    if (load_yaml(sources_, id, diags_, &doc)) {
      read_idl(doc, id, diags_, &file);
    } else {
      file.file_id = id;
    }
    std::vector<size_t> direct;
    for (const syntax::Name& inc : file.includes) {
      std::optional<size_t> index = include(path, inc);
      if (index && std::find(direct.begin(), direct.end(), *index) == direct.end())
        direct.push_back(*index);
    }
    index_[key] = result_.files.size();
    result_.files.push_back(std::move(file));
    result_.includes.push_back(std::move(direct));

    stack_.pop_back();
    state_[key] = State::Done;
  }

  // Loads one included file unless it was loaded already; returns its index
  // in result_.files, or nullopt when it could not be loaded (reported).
  std::optional<size_t> include(const std::string& from, const syntax::Name& inc) {
    auto control = std::find_if(inc.text.begin(), inc.text.end(), [](char c) {
      return static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
    });
    if (control != inc.text.end()) {
      diags_.error(
          inc.span,
          fmt::format(
              "included file name contains {}",
              *control == '\n' ? "a newline" : "a control character"),
          "rename the file: depfiles and generated `#include` lines cannot name it");
      return std::nullopt;
    }
    std::string path = find_include(from, inc.text);
    if (path.empty()) {
      std::string hint =
          include_dirs_.empty()
              ? "paths are relative to the including file; add a search folder with -I"
              : fmt::format("searched next to `{}` and in {}", from, quoted_list(include_dirs_));
      diags_.error(inc.span, fmt::format("cannot find included file `{}`", inc.text), hint);
      return std::nullopt;
    }
    std::string key = reader_.identity(path);
    auto it = state_.find(key);
    if (it != state_.end() && it->second == State::Done)
      return index_.at(key);  // diamond: read once
    if (stack_.size() >= kMaxIncludeDepth) {
      report_deep_chain(path, inc.span);
      return std::nullopt;
    }
    if (it != state_.end() && it->second == State::InProgress) {
      std::string chain;
      bool on = false;
      for (const auto& frame : stack_) {
        if (frame.key == key) on = true;
        if (on) chain += fmt::format("`{}` -> ", frame.path);
      }
      diags_.error(
          inc.span,
          fmt::format("include cycle: {}`{}`", chain, path),
          "move the shared records and enums into a file that includes neither");
      return std::nullopt;
    }
    std::string error;
    auto text = reader_.read(path, &error);
    if (!text) {
      diags_.error(inc.span, fmt::format("cannot read included file `{}`: {}", path, error));
      return std::nullopt;
    }
    load_file(path, std::move(*text), inc.span);
    return index_.at(key);
  }

  // A chain too long: reported where it starts, at the main file's include
  // (so it comes before the errors it causes there, like the types of the
  // files never read being unknown), with a note where it goes too deep.
  void report_deep_chain(const std::string& path, Span too_deep) {
    std::string chain;
    for (size_t i = 0; i < stack_.size(); ++i) {
      if (i < 2 || i + 2 >= stack_.size()) {
        chain += fmt::format("`{}` -> ", stack_[i].path);
      } else if (i == 2) {
        chain += "... -> ";
      }
    }
    diags_.error(
        stack_[1].included_from,
        fmt::format("includes nest more than {} files deep: {}`{}`", kMaxIncludeDepth, chain, path),
        "include the shared files from the main file instead of through a chain");
    diags_.note(
        too_deep,
        fmt::format("`{}` would be file {} of the chain", path, stack_.size() + 1));
  }

  std::string find_include(const std::string& from, const std::string& name) {
    fs::path p(name);
    if (p.is_absolute()) return reader_.exists(name) ? name : std::string();
    fs::path local = fs::path(from).parent_path() / p;
    if (reader_.exists(local.string())) return local.lexically_normal().string();
    for (const auto& dir : include_dirs_) {
      fs::path candidate = fs::path(dir) / p;
      if (reader_.exists(candidate.string())) return candidate.lexically_normal().string();
    }
    return {};
  }

  enum class State { InProgress, Done };
  struct Frame {
    std::string key;
    std::string path;
    Span included_from;
  };

  const std::vector<std::string>& include_dirs_;
  FileReader& reader_;
  SourceManager& sources_;
  Diagnostics& diags_;
  std::map<std::string, State> state_;
  std::map<std::string, size_t> index_;  // identity -> index in result_.files
  std::vector<Frame> stack_;
  LoadedIdl result_;
};

}  // namespace

FileReader& disk_reader() {
  static DiskReader reader;
  return reader;
}

LoadedIdl load_idl(
    const std::string& main_path,
    const std::vector<std::string>& include_dirs,
    FileReader& reader,
    SourceManager& sources,
    Diagnostics& diags) {
  return Loader(include_dirs, reader, sources, diags).run(main_path);
}

}  // namespace structop
