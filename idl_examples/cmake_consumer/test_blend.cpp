// Calls cmake_demo::blend through the generated C++ API (the dispatcher).
#include "blend.ops.h"

#include <ATen/ATen.h>

#include <cstdio>

int main() {
  const at::Tensor a = at::full({3}, 4.0);
  const at::Tensor b = at::full({3}, 8.0);
  cmake_demo::Mix mix;  // weight: the IDL's default, 0.25
  if (!at::allclose(cmake_demo::blend(a, b, mix), at::full({3}, 5.0))) {
    std::fprintf(stderr, "blend with the default weight: wrong result\n");
    return 1;
  }
  mix.weight = 0.5;
  if (!at::allclose(cmake_demo::blend(a, b, mix), at::full({3}, 6.0))) {
    std::fprintf(stderr, "blend with weight 0.5: wrong result\n");
    return 1;
  }
  std::printf("cmake_demo::blend ok\n");
  return 0;
}
