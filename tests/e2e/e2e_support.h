// Helpers shared by the end-to-end C++ tests (test_forward.cpp, test_autograd.cpp).
#pragma once

// Prefixed macros: Debian's c10 includes glog, whose CHECK() would replace Catch's.
#define CATCH_CONFIG_PREFIX_ALL
#include "catch2.h"

#include <ATen/ATen.h>
#include <ATen/record_function.h>

#include <algorithm>
#include <string>
#include <vector>

namespace e2e {

/// Values equal up to float64 rounding.
inline bool close(
    const at::Tensor& a,
    const at::Tensor& b,
    double rtol = 1e-7,
    double atol = 1e-9) {
  return a.sizes() == b.sizes() && a.scalar_type() == b.scalar_type() &&
         at::allclose(a, b, rtol, atol, /*equal_nan=*/true);
}

/// The message of what `fn` throws as c10::Error, without the C++ backtrace.
template <class Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const c10::Error& e) {
    return e.what_without_backtrace();
  }
  return "<no error>";
}

inline at::TensorOptions f64() {
  return at::TensorOptions().dtype(at::kDouble);
}
inline at::TensorOptions on_meta() {
  return at::TensorOptions().dtype(at::kDouble).device(at::kMeta);
}

/// Records the name of every op the dispatcher calls on this thread while it
/// lives ("compose::axpy", "aten::mul", ...): proof that one op calls another.
class OpTrace {
 public:
  OpTrace() {
    names().clear();
    handle_ = at::addThreadLocalCallback(
        at::RecordFunctionCallback(&OpTrace::on_start).scopes({at::RecordScope::FUNCTION}));
  }
  ~OpTrace() { at::removeCallback(handle_); }
  OpTrace(const OpTrace&) = delete;
  OpTrace& operator=(const OpTrace&) = delete;

  /// How many times `op` was called.
  static size_t count(const std::string& op) {
    return static_cast<size_t>(std::count(names().begin(), names().end(), op));
  }

 private:
  static std::vector<std::string>& names() {
    static thread_local std::vector<std::string> list;
    return list;
  }
  static std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) {
    names().emplace_back(fn.name());
    return nullptr;
  }

  at::CallbackHandle handle_;
};

}  // namespace e2e
