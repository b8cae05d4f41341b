// Temporary: the C++ and Python emitters land with the code-generation work.
#include <stdexcept>

#include "emit/emitters.h"

namespace structop {

std::string emit_header(const EmitInput&) { throw std::logic_error("--emit h is not implemented yet"); }
std::string emit_source(const EmitInput&) { throw std::logic_error("--emit cpp is not implemented yet"); }
std::string emit_stubs(const EmitInput&) { throw std::logic_error("--emit stubs is not implemented yet"); }

}  // namespace structop
