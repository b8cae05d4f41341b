#include "driver/output_writer.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

namespace structop {
namespace {

namespace fs = std::filesystem;

std::string error_text(int error) {
  return std::strerror(error);
}

/// Whether `path` is a regular file (a symlink to one counts) that holds
/// exactly `content`. Opened without blocking and checked before reading,
/// so a FIFO or a device planted at that name is only ever "different".
bool holds(const std::string& path, const std::string& content) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st{};
  bool same = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
              static_cast<uint64_t>(st.st_size) == content.size();
  char buffer[1 << 16];
  size_t at = 0;
  while (same) {
    ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      same = n == 0 && at == content.size();
      break;
    }
    const size_t got = static_cast<size_t>(n);
    same = at + got <= content.size() && content.compare(at, got, buffer, got) == 0;
    at += got;
  }
  ::close(fd);
  return same;
}

/// Writes all of `content` to `fd`; returns 0 or an errno value.
int write_all(int fd, const std::string& content) {
  size_t at = 0;
  while (at < content.size()) {
    ssize_t n = ::write(fd, content.data() + at, content.size() - at);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    if (n == 0) return EIO;
    at += static_cast<size_t>(n);
  }
  return 0;
}

/// The mode a newly created file gets (0666 less the umask), which mkstemp's
/// 0600 would otherwise narrow.
mode_t new_file_mode() {
  mode_t mask = ::umask(0);
  ::umask(mask);
  return 0666 & ~mask;
}

/// Creates a temporary file beside `path` with an unpredictable name
/// (mkostemp: O_CREAT | O_EXCL, so nothing planted there is followed or
/// reused), writes `content` to it and returns its name; nullopt with
/// `*error` set on failure, leaving nothing behind.
std::optional<std::string> write_temporary(
    const std::string& path,
    const std::string& content,
    std::string* error) {
  fs::path target(path);
  fs::path dir = target.parent_path();
  // Hidden, and short enough for any file name: `.NAME.XXXXXX`.
  std::string name = "." + target.filename().string().substr(0, 64) + ".XXXXXX";
  std::string tmp = (dir.empty() ? fs::path(name) : dir / name).string();
  int fd = ::mkostemp(tmp.data(), O_CLOEXEC);
  if (fd < 0) {
    *error = error_text(errno);
    return std::nullopt;
  }
  int failure = ::fchmod(fd, new_file_mode()) == 0 ? 0 : errno;
  if (!failure) failure = write_all(fd, content);
  if (::close(fd) != 0 && !failure) failure = errno;  // NFS reports some errors here
  if (failure) {
    ::unlink(tmp.c_str());
    *error = failure == ENOSPC ? error_text(failure) + " (the disk is full)" : error_text(failure);
    return std::nullopt;
  }
  return tmp;
}

/// Moves `tmp` to `path` where nothing exists at `path`, never replacing
/// anything that appeared there meanwhile; returns 0 or an errno value.
/// `tmp` is gone afterwards either way.
int move_to_new_name(const std::string& tmp, const std::string& path, const std::string& content) {
  if (::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, path.c_str(), RENAME_NOREPLACE) == 0) return 0;
  int result = errno;
  if (result == EINVAL || result == ENOSYS || result == EOPNOTSUPP) {
    // A file system without RENAME_NOREPLACE: link(2) does not replace either.
    result = ::link(tmp.c_str(), path.c_str()) == 0 ? 0 : errno;
    if (result == EPERM || result == EOPNOTSUPP) {
      // Nor hard links: create the file exclusively and copy (not atomic,
      // but still never over an existing file or through a symlink).
      int fd = ::open(
          path.c_str(),
          O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
          new_file_mode());
      result = fd < 0 ? errno : write_all(fd, content);
      if (fd >= 0 && ::close(fd) != 0 && !result) result = errno;
      if (fd >= 0 && result) ::unlink(path.c_str());
    }
  }
  ::unlink(tmp.c_str());
  return result;
}

/// One output's plan: the report, and the temporary file holding its new
/// content once staged.
struct Planned {
  WriteReport report;
  const std::string* content = nullptr;
  bool never_overwrite = false;
  std::optional<std::string> tmp;
};

/// The first phase for one output: decides Unchanged / KeptExisting, or
/// writes the content to a temporary file beside the target (or fails).
void stage(Planned* p) {
  WriteReport& r = p->report;
  if (!r.error.empty()) return;  // known to fail (a depfile that cannot be written)
  struct stat st{};
  const bool present = ::lstat(r.path.c_str(), &st) == 0;
  if (present && S_ISDIR(st.st_mode)) {
    r.error = "a folder of that name is in the way";
    return;
  }
  if (present && p->never_overwrite) {  // even a dangling symlink
    r.status = WriteStatus::KeptExisting;
    return;
  }
  if (present && holds(r.path, *p->content)) {
    r.status = WriteStatus::Unchanged;
    return;
  }
  p->tmp = write_temporary(r.path, *p->content, &r.error);
}

/// The second phase: moves the temporary file into place. rename(2)
/// replaces a symlink at the target, never the file it points to.
void commit(Planned* p) {
  WriteReport& r = p->report;
  int result = 0;
  if (p->never_overwrite) {
    result = move_to_new_name(*p->tmp, r.path, *p->content);
    if (result == EEXIST) {
      r.status = WriteStatus::KeptExisting;  // it appeared while structopc ran
      p->tmp.reset();
      return;
    }
  } else if (std::rename(p->tmp->c_str(), r.path.c_str()) != 0) {
    result = errno;
    ::unlink(p->tmp->c_str());
  }
  p->tmp.reset();
  if (result) {
    r.error = error_text(result);
  } else {
    r.status = WriteStatus::Written;
  }
}

/// Stages every file, then commits them all or, when any could not be
/// staged or committed, discards the rest (NotWritten).
void write_all_or_none(std::vector<Planned>& plans) {
  bool failed = false;
  for (auto& p : plans) {
    stage(&p);  // every one, so that every problem is reported
    failed |= !p.tmp && p.report.status == WriteStatus::Failed;
  }
  for (auto& p : plans) {
    if (!p.tmp) continue;
    if (!failed) {
      commit(&p);
      failed = p.report.status == WriteStatus::Failed;
      continue;
    }
    ::unlink(p.tmp->c_str());
    p.tmp.reset();
    p.report.status = WriteStatus::NotWritten;
  }
}

/// `path` for a message on one line: control characters as `\n`, `\x01`...
std::string printable(const std::string& path) {
  std::string out;
  for (char c : path) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (u < 0x20 || u == 0x7f) {
      out += fmt::format("\\x{:02x}", u);
    } else {
      out += c;
    }
  }
  return out;
}

/// Appends `path` to a depfile line, escaped for Make and Ninja (which
/// follows GCC's depfiles): a space is preceded by a backslash and any
/// backslashes before it doubled, `#` by a backslash, and `$` doubled.
/// Returns false, with `*error` set, for what neither can read back.
bool append_escaped(const std::string& path, std::string* out, std::string* error) {
  for (char c : path) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) {
      const char* what = c == '\n'   ? "a newline"
                         : c == '\r' ? "a carriage return"
                         : c == '\t' ? "a tab"
                                     : "a control character";
      *error = fmt::format(
          "the path `{}` contains {}, which a depfile cannot express",
          printable(path),
          what);
      return false;
    }
  }
  if (!path.empty() && path.back() == '\\') {
    *error = fmt::format("the path `{}` ends in a backslash, which a depfile cannot express", path);
    return false;
  }
  size_t backslashes = 0;  // in a row, just before `c`
  for (char c : path) {
    if (c == ' ') {
      out->append(backslashes + 1, '\\');
    } else if (c == '#') {
      *out += '\\';
    } else if (c == '$') {
      *out += '$';
    }
    *out += c;
    backslashes = c == '\\' ? backslashes + 1 : 0;
  }
  return true;
}

/// A file's identity, through symlinks (`stat`) or of the name itself
/// (`lstat`): nullopt where nothing is.
std::optional<std::pair<dev_t, ino_t>> file_id(const std::string& path, bool follow) {
  struct stat st{};
  if ((follow ? ::stat(path.c_str(), &st) : ::lstat(path.c_str(), &st)) != 0) return std::nullopt;
  return std::make_pair(st.st_dev, st.st_ino);
}

/// `path` absolute, with symlinks and `..` resolved as far as it exists
/// (absolute first: weakly_canonical leaves a path none of which exists as
/// it is, and `x.d` and `./x.d` would differ).
fs::path resolved(const fs::path& path) {
  std::error_code ec;
  fs::path p = fs::absolute(path, ec);
  if (!ec) p = fs::weakly_canonical(p, ec);
  return ec ? fs::absolute(path, ec).lexically_normal() : p;
}

/// Where a path leads: the file it names (through symlinks) and that path
/// resolved; and the directory entry a rename to it replaces (its folder
/// resolved, not its last name: a symlink there is replaced, not followed).
struct Place {
  std::optional<std::pair<dev_t, ino_t>> file, entry_file;
  fs::path path, entry;
};

Place place_of(const std::string& path) {
  Place p;
  p.file = file_id(path, /*follow=*/true);
  p.entry_file = file_id(path, /*follow=*/false);
  p.path = resolved(path);
  const fs::path name = fs::path(path).filename();
  const fs::path folder = fs::path(path).parent_path();
  p.entry = name.empty() || name == "." || name == ".."
                ? p.path
                : resolved(folder.empty() ? fs::path(".") : folder) / name;
  return p;
}

/// Whether writing `out` would replace the file the run read as `in`, or
/// write through a symlink or hard link to it (refused too: that name is
/// surely a mistake).
bool overwrites_input(const Place& out, const Place& in) {
  if (out.file && in.file) return *out.file == *in.file;
  return out.path == in.path || out.entry == in.path;
}

/// Whether two outputs would land in one directory entry (or in two hard
/// links of one file). Two symlinks at two outputs' names are two entries:
/// each is replaced, what they point to is not written.
bool same_output(const Place& a, const Place& b) {
  if (a.entry_file && b.entry_file && *a.entry_file == *b.entry_file) return true;
  return a.entry == b.entry;
}

/// Fails every output that names a file the run read or an earlier output
/// (so the depfile, last, is the one blamed); true when one did.
bool refuse_clashes(std::vector<Planned>& plans, const std::vector<std::string>& reads) {
  std::vector<Place> read_places, written;
  for (const auto& path : reads) read_places.push_back(place_of(path));
  bool clash = false;
  for (size_t i = 0; i < plans.size(); ++i) {
    WriteReport& r = plans[i].report;
    const Place here = place_of(r.path);
    written.push_back(here);
    if (!r.error.empty()) continue;  // already known to fail
    for (size_t j = 0; j < reads.size() && r.error.empty(); ++j) {
      if (overwrites_input(here, read_places[j]))
        r.error = fmt::format("that is `{}`, which this run reads", printable(reads[j]));
    }
    for (size_t j = 0; j < i && r.error.empty(); ++j) {
      if (same_output(here, written[j]))
        r.error = fmt::format(
            "that is `{}`, another output of this run",
            printable(plans[j].report.path));
    }
    clash |= !r.error.empty();
  }
  return clash;
}

}  // namespace

std::string output_path(const std::string& out_dir, const std::string& name) {
  return (fs::path(out_dir.empty() ? "." : out_dir) / name).string();
}

WriteReport write_if_changed(const std::string& path, const std::string& content) {
  std::vector<Planned> plans(1);
  plans[0].report.path = path;
  plans[0].content = &content;
  write_all_or_none(plans);
  return plans[0].report;
}

// Two phases, so that a run either updates every changed output and the
// depfile or none of them: all changed contents are first written to
// temporary files beside their targets; only when every one of them
// succeeded are they renamed into place, the depfile last. (A rename does not
// need disk space, so a failure after that point would need another process
// to interfere; the files not yet renamed are then left as they were.)
std::vector<WriteReport> write_outputs(
    const std::vector<OutputFile>& files,
    const std::string& out_dir,
    const std::optional<DepfileRequest>& depfile,
    const std::vector<std::string>& reads) {
  std::vector<Planned> plans(files.size() + (depfile ? 1 : 0));
  std::vector<std::string> targets;
  for (size_t i = 0; i < files.size(); ++i) {
    plans[i].report.path = output_path(out_dir, files[i].name);
    plans[i].content = &files[i].content;
    plans[i].never_overwrite = files[i].never_overwrite;
    targets.push_back(plans[i].report.path);
  }
  std::string depfile_text;
  if (depfile) {
    Planned& p = plans.back();
    p.report.path = depfile->path;
    p.content = &depfile_text;
    // A path the depfile cannot express fails it like a full disk would:
    // nothing is written.
    if (auto text = make_depfile(targets, depfile->inputs, &p.report.error))
      depfile_text = std::move(*text);
  }
  if (refuse_clashes(plans, reads)) {
    // Nothing is staged: no file, not even a temporary one, is written.
    for (auto& p : plans) {
      if (p.report.error.empty()) p.report.status = WriteStatus::NotWritten;
    }
  } else {
    std::error_code ec;
    if (!out_dir.empty()) fs::create_directories(out_dir, ec);  // else staging says why
    write_all_or_none(plans);
  }
  std::vector<WriteReport> reports;
  for (auto& p : plans) reports.push_back(std::move(p.report));
  return reports;
}

std::optional<std::string> make_depfile(
    const std::vector<std::string>& targets,
    const std::vector<std::string>& inputs,
    std::string* error) {
  std::string out, ignored;
  if (!error) error = &ignored;
  for (size_t i = 0; i < targets.size(); ++i) {
    if (i) out += ' ';
    if (!append_escaped(targets[i], &out, error)) return std::nullopt;
  }
  out += ":";
  for (const auto& in : inputs) {
    out += ' ';
    if (!append_escaped(in, &out, error)) return std::nullopt;
  }
  out += "\n";
  return out;
}

}  // namespace structop
