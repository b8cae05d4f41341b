// The main function of the C++ test programs with Catch2 2 (Debian 12), which
// has no catch2-with-main library; Catch2 3 brings its own (tests/meson.build).
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
