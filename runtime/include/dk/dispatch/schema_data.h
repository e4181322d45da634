// dk/dispatch/schema_data.h: operator schemas as constant data, for the generator to emit.
//
// Note [Pre-built schemas]
// The generator parses and checks every schema of its YAML. Rather than print each one back
// as text for the runtime to parse a second time at startup, it emits the parsed form as
// constant tables of the structs below (one SchemaData per operator, in the RegisterSchema
// sources), and Library::def(const SchemaData&) builds the FunctionSchema from them: no
// tokens, no error paths, the dispatch-argument bitmap already computed. These tables live in
// read-only data, cost no dynamic initialization, and print back (FunctionSchema::str) to the
// same text the YAML holds: tests/test_generated_ops.cpp compares every generated operator's
// registered schema with its parsed text, and the scale test does so for PyTorch's 2,493.
// Library::def(string) keeps parsing, for operators written by hand.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "dk/dispatch/function_schema.h"

namespace dk::schema_data {

// The '?' and '[]' around a base type, innermost first: Tensor?[] is {Tensor, {kOptional,
// kList}}; int[2] is {Int, {listOf(2)}}. A zero ends the list.
inline constexpr uint8_t kOptional = 1;
inline constexpr uint8_t kList = 2;  // T[]; kList + N is T[N]
inline constexpr size_t kMaxWrappers = 4;
constexpr uint8_t listOf(uint8_t fixed_size) { return static_cast<uint8_t>(kList + fixed_size); }

struct TypeData {
  TypeKind base = TypeKind::Tensor;
  uint8_t wrappers[kMaxWrappers] = {};
};

// An alias annotation on a Tensor: before "a" (or "a|b"), after "" (no "->"), "*" or "b|c".
// An annotation on a wrapped type (Tensor(a!)[]) belongs to the element, as the parser reads it.
struct AliasData {
  const char* before = nullptr;  // nullptr: the argument has no annotation
  const char* after = "";
  bool is_write = false;
};

struct ArgumentData {
  const char* name = "";
  TypeData type{};
  const char* default_value = nullptr;  // as written in the schema; nullptr: none
  AliasData alias{};
  bool kwarg_only = false;
};

// One operator. `name` carries no namespace: the Library that defines it adds its own.
struct SchemaData {
  const char* name = "";
  const char* overload_name = "";
  std::span<const ArgumentData> arguments{};
  std::span<const ArgumentData> returns{};
  uint64_t dispatch_bitmap = 0;  // the generator's (ops::X::dispatch_bitmap), checked at def
};

// The FunctionSchema `data` describes, named `name` (the caller qualifies it).
FunctionSchema toFunctionSchema(const SchemaData& data, OperatorName name);

}  // namespace dk::schema_data
