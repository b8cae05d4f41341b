// The JSON Schema of the IDL format (`structopc --print-json-schema`), for
// editors that validate and complete YAML (`# yaml-language-server: $schema=`).
// Its text is compiler/schema/ops.schema.json, built into structopc: that
// file is the one place for the keys' descriptions (docs/idl-keys.md is
// generated from it and checked against it).
#pragma once

namespace structop {

/// The schema, as JSON text ending in a newline.
const char* idl_json_schema();

}  // namespace structop
