// structop runtime library: the templates of structop/registration.h for
// the common flat argument types and outputs, instantiated once here (the
// header declares them `extern template`), so that each generated X.ops.cpp
// does not generate their code again.
#include <structop/registration.h>

#define STRUCTOP_INSTANTIATE_FLAT_TYPE(T)         \
  template detail::arg_t<T> arg<T>(c10::IValue&); \
  template void detail::push<T>(torch::jit::Stack&, std::add_rvalue_reference_t<T>);

namespace structop {
STRUCTOP_COMMON_FLAT_TYPES(STRUCTOP_INSTANTIATE_FLAT_TYPE)
template void return_outputs<at::Tensor>(torch::jit::Stack*, std::size_t, at::Tensor&&);
template at::Tensor output<at::Tensor>(const c10::IValue&);
template at::Tensor detail::pop_outputs<at::Tensor>(torch::jit::Stack&);
}  // namespace structop
