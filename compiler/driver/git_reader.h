// A FileReader over one git revision, for `structopc --compat REV:x.ops.yaml
// x.ops.yaml`: every path (the main file, its includes, -I folders) names a
// file of the working tree, read as it was at REV (`git -C FOLDER cat-file
// blob --end-of-options REV:./NAME`), and diagnostics name it `REV:PATH`.
#pragma once

#include <optional>
#include <string>

#include "load/idl_loader.h"

namespace structop {

class GitRevisionReader : public FileReader {
 public:
  explicit GitRevisionReader(std::string revision) : revision_(std::move(revision)) {}

  std::optional<std::string> read(const std::string& path, std::string* error) override;
  std::string identity(const std::string& path) override;
  bool exists(const std::string& path) override;
  std::string display_path(const std::string& path) override;

 private:
  /// Where git runs and the object it reads: the file's folder, `REV:./NAME`.
  struct Object {
    std::string folder;
    std::string name;
  };
  Object object(const std::string& path) const;

  std::string revision_;
};

/// Why `revision` (the REV of `REV:PATH`) is not handed to git: it starts
/// with `-` (an option), or holds a character no revision has (a control
/// character, a space, `?`, `*`, `[`, `\`) or `..`; nullopt when it is fine.
/// git is also called with `--end-of-options`, so no argument can become
/// an option.
std::optional<std::string> invalid_revision(const std::string& revision);

/// Splits `REV:PATH` when `arg` names no file on disk and has a `:` after a
/// non-empty revision; nullopt otherwise (a plain path).
std::optional<std::pair<std::string, std::string>> split_revision_path(const std::string& arg);

}  // namespace structop
