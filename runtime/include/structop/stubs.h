// structop runtime: what generated stubs (X.ops.stubs.cpp) call until their
// kernels are written. Light: c10's exceptions only.
#pragma once

#include <c10/util/Exception.h>

namespace structop {

/// The body of a generated stub: throws c10::NotImplementedError (Python's
/// NotImplementedError) naming the kernel: "demo::kernels::op
/// (demo.ops.stubs.cpp) is not implemented yet". It takes the stub's
/// parameters only so that they count as used: a file of stubs compiles
/// without -Wunused-parameter warnings, and each body is one line to replace.
template <class... Params>
[[noreturn]] void not_implemented(const char* kernel, const Params&... /*params*/) {
  C10_THROW_ERROR(NotImplementedError, c10::str(kernel, " is not implemented yet"));
}

}  // namespace structop
