// structop runtime library: the templates of structop/registration.h for
// the common flat argument types and outputs, instantiated once here (the
// header declares the same list `extern template`), so that each generated
// X.ops.cpp does not generate their code again.
#include <structop/registration.h>

namespace structop {
STRUCTOP_RUNTIME_INSTANTIATIONS(template)
}  // namespace structop
