// Catch2 for the C++ tests, version 3 (split headers; Debian 13) or version 2
// (one header; Debian 12), spelled the same way: the tests write Catch2 3's
// names (Catch::Approx, Catch::Matchers::ContainsSubstring), defined here for
// version 2. Define CATCH_CONFIG_PREFIX_ALL before including this for the
// CATCH_-prefixed macros. The main function comes from catch2-with-main
// (version 3) or from catch2_main.cpp (version 2); see tests/meson.build.
#pragma once

#if __has_include(<catch2/catch_test_macros.hpp>)
#include <catch2/catch_approx.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#else
#include <catch2/catch.hpp>

#include <string>

namespace Catch {
using Detail::Approx;
namespace Matchers {
/// Catch2 3's name for version 2's Contains (a substring matcher).
inline StdString::ContainsMatcher ContainsSubstring(
    const std::string& text,
    CaseSensitive::Choice sensitivity = CaseSensitive::Yes) {
  return Contains(text, sensitivity);
}
}  // namespace Matchers
}  // namespace Catch
#endif
