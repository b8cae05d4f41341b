#include "driver/git_reader.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include <fmt/format.h>

#include "load/yaml_tree.h"

extern char** environ;

namespace structop {
namespace fs = std::filesystem;

namespace {

/// What `git ARGS...` printed on stdout (at most `limit` bytes kept) and
/// stderr, and its exit status; nullopt with `*error` set when git cannot run.
struct GitRun {
  int status = -1;
  std::string out, err;
};

std::optional<GitRun> run_git(
    const std::vector<std::string>& args,
    size_t limit,
    std::string* error) {
  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) {
    *error = std::strerror(errno);
    return std::nullopt;
  }
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    *error = std::strerror(errno);
    ::close(out_pipe[0]);
    ::close(out_pipe[1]);
    return std::nullopt;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
  std::vector<std::string> argv_text = {"git"};
  argv_text.insert(argv_text.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_text) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int spawned = posix_spawnp(&pid, "git", &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  if (spawned != 0) {
    *error = std::string("cannot run git: ") + std::strerror(spawned);
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    return std::nullopt;
  }
  GitRun run;
  // stderr is a line or two; stdout is read first, its pipe never fills up.
  auto drain = [](int fd, std::string* to, size_t max) {
    char buffer[65536];
    for (;;) {
      ssize_t n = ::read(fd, buffer, sizeof buffer);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      if (to->size() < max) to->append(buffer, std::min(static_cast<size_t>(n), max - to->size()));
    }
    ::close(fd);
  };
  drain(out_pipe[0], &run.out, limit);
  drain(err_pipe[0], &run.err, 4096);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  run.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return run;
}

}  // namespace

GitRevisionReader::Object GitRevisionReader::object(const std::string& path) const {
  // git runs in the file's folder and reads `REV:./NAME` there: relative
  // paths are then the working tree's, whatever the current folder is (a
  // build folder outside the repository too).
  const fs::path p = fs::path(path).lexically_normal();
  std::string folder = p.parent_path().string();
  return {folder.empty() ? "." : folder, revision_ + ":./" + p.filename().string()};
}

std::optional<std::string> GitRevisionReader::read(const std::string& path, std::string* error) {
  const Object o = object(path);
  auto run = run_git(
      {"-C", o.folder, "cat-file", "blob", "--end-of-options", o.name},
      YamlLimits().max_bytes + 1,
      error);
  if (!run) return std::nullopt;
  if (run->status != 0) {
    // Its first line only: a usage text would be forty (the diagnostic
    // escapes any control character left).
    std::string message = run->err.substr(0, run->err.find('\n'));
    while (!message.empty() && message.back() == '\r') message.pop_back();
    if (message.rfind("fatal: ", 0) == 0) message = message.substr(7);
    *error = message.empty() ? "git cat-file failed" : "git: " + message;
    return std::nullopt;
  }
  return std::move(run->out);
}

std::string GitRevisionReader::identity(const std::string& path) {
  std::error_code ec;
  const fs::path absolute = fs::absolute(path, ec);
  return revision_ + ":" + (ec ? path : absolute.lexically_normal().string());
}

bool GitRevisionReader::exists(const std::string& path) {
  std::string error;
  const Object o = object(path);
  auto run = run_git({"-C", o.folder, "cat-file", "-e", "--end-of-options", o.name}, 0, &error);
  return run && run->status == 0;
}

std::string GitRevisionReader::display_path(const std::string& path) {
  return revision_ + ":" + path;
}

std::optional<std::string> invalid_revision(const std::string& revision) {
  if (revision.empty()) return "it is empty";
  if (revision[0] == '-') return "it starts with `-`, which git would read as an option";
  for (char c : revision) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) return "it contains a control character";
    if (c == ' ') return "it contains a space";
    if (std::strchr("?*[\\", c)) return fmt::format("it contains `{}`", c);
  }
  if (revision.find("..") != std::string::npos)
    return "it contains `..` (a range is not one revision)";
  return std::nullopt;
}

std::optional<std::pair<std::string, std::string>> split_revision_path(const std::string& arg) {
  std::error_code ec;
  if (fs::exists(arg, ec)) return std::nullopt;
  const size_t colon = arg.find(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == arg.size()) return std::nullopt;
  return std::make_pair(arg.substr(0, colon), arg.substr(colon + 1));
}

}  // namespace structop
