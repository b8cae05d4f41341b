// Names that Python reserves, which a name in the generated Python cannot be
// (or must be spelled around).
#pragma once

#include <string_view>

namespace structop::lang {

/// A Python keyword (keyword.kwlist: `from`, `lambda`, `None`): not a valid
/// name for a Python parameter, e.g. in torch.fx's signature of a custom op.
/// The list is lang/lists/python_keywords.inc (tools/lang_lists.py).
bool is_python_keyword(std::string_view name);

}  // namespace structop::lang
