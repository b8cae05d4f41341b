// Calls the ops through the generated C++ API (and so through the dispatcher),
// one record of the shared IDL file passed to both.
#include "consumer.ops.h"
#include "sharpen.ops.h"

#include <ATen/ATen.h>

#include <cstdio>

int main() {
  at::Tensor x = at::arange(4, at::kFloat);
  consumer::SmoothCfg cfg;
  cfg.kernel.weights = at::ones({3});
  cfg.kernel.gain = 2.0;
  at::Tensor y = consumer::smooth(x, cfg);  // 6 * x
  if (!at::allclose(y, x * 6)) {
    std::fprintf(stderr, "smooth without clamp: wrong result\n");
    return 1;
  }
  cfg.clamp = 7.0;
  y = consumer::smooth(x, cfg);  // clamp(6 * x, -7, 7)
  if (!at::allclose(y, at::clamp(x * 6, -7, 7))) {
    std::fprintf(stderr, "smooth with clamp: wrong result\n");
    return 1;
  }
  y = sharpen::sharpen(x, cfg.kernel, 0.5);  // x * (1 + 0.5 * 2 * 3)
  if (!at::allclose(y, x * 4)) {
    std::fprintf(stderr, "sharpen: wrong result\n");
    return 1;
  }
  std::printf("consumer::smooth and sharpen::sharpen ok\n");
  return 0;
}
