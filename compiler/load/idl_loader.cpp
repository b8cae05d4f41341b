#include "load/idl_loader.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <fmt/format.h>

#include "load/idl_reader.h"
#include "load/yaml_tree.h"

namespace structop {
namespace {

namespace fs = std::filesystem;

/// Includes may nest this deep (loading recurses once per level).
constexpr size_t kMaxIncludeDepth = 100;

class DiskReader : public FileReader {
 public:
  std::optional<std::string> read(const std::string& path, std::string* error) override {
    std::error_code ec;
    if (fs::is_directory(path, ec)) {
      *error = "is a directory";
      return std::nullopt;
    }
    std::ifstream in(path, std::ios::binary);
    if (!in) {
      *error = std::strerror(errno);
      return std::nullopt;
    }
    std::ostringstream ss;
    ss << in.rdbuf();
    return std::move(ss).str();
  }

  std::string identity(const std::string& path) override {
    std::error_code ec;
    fs::path p = fs::weakly_canonical(path, ec);
    return ec ? fs::path(path).lexically_normal().string() : p.string();
  }

  bool exists(const std::string& path) override {
    std::error_code ec;
    return fs::is_regular_file(path, ec);
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
      int id = sources_.add(main_path, "");
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

    int id = sources_.add(path, std::move(text));
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
      diags_.error(
          inc.span,
          fmt::format("includes nest more than {} files deep", kMaxIncludeDepth),
          "include the shared files from the main file instead of through a chain");
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
