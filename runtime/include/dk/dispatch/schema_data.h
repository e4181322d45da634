// dk/dispatch/schema_data.h: operator schemas as constant data, for the generator to emit.
//
// Note [Pre-built schemas]
// The generator parses and checks every schema of its YAML. Rather than print each one back
// as text for the runtime to parse a second time at startup, it emits the parsed form as
// constant tables of the structs below (one SchemaData per operator, in the RegisterSchema
// sources), and Library::def(const SchemaData&) builds the FunctionSchema from them: no
// tokens, no error paths, the dispatch-argument bitmap already computed. Names, default values
// and alias sets are offsets into one string pool per source file, not pointers, so the
// argument tables stay in read-only pages that the loader neither relocates nor copies (with
// PyTorch's 2,493 operators, pointers made startup slower than parsing text: the pages they
// dirty cost more than the parsing saved). Every table prints back (FunctionSchema::str) to
// the text the YAML holds: tests/test_generated_ops.cpp compares each generated operator's
// registered schema with its parsed text, and the scale test does so for PyTorch's 2,493.
// Library::def(string) keeps parsing, for operators written by hand.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "dk/dispatch/function_schema.h"

namespace dk::schema_data {

// An offset into the SchemaData's string pool; kNoString where a field is absent.
using StringOffset = uint32_t;
inline constexpr StringOffset kNoString = UINT32_MAX;

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

// An alias annotation on a Tensor: before "a" (or "a|b"), after absent (no "->"), "*" or "b|c".
// An annotation on a wrapped type (Tensor(a!)[]) belongs to the element, as the parser reads it.
struct AliasData {
  StringOffset before = kNoString;  // kNoString: the argument has no annotation
  StringOffset after = kNoString;
  bool is_write = false;
};

struct ArgumentData {
  StringOffset name = 0;  // 0 is the pool's empty string (an unnamed return)
  TypeData type{};
  StringOffset default_value = kNoString;  // as written in the schema
  AliasData alias{};
  bool kwarg_only = false;
};

// One operator. `name` carries no namespace: the Library that defines it adds its own.
struct SchemaData {
  // The pool the offsets index: NUL-terminated strings, the empty one at offset 0 (the
  // generator's is a struct of char arrays, hence not a char pointer).
  const void* strings = "";
  StringOffset name = 0;
  StringOffset overload_name = 0;
  std::span<const ArgumentData> arguments{};
  std::span<const ArgumentData> returns{};
  uint64_t dispatch_bitmap = 0;  // the generator's (ops::X::dispatch_bitmap), checked at def
};

// The FunctionSchema `data` describes, named `name` (the caller qualifies it).
FunctionSchema toFunctionSchema(const SchemaData& data, OperatorName name);

// The dispatch-argument bitmap of `data`'s arguments, read from the tables without building
// the schema: OperatorEntry::computeDispatchArgumentBitmap(toFunctionSchema(data, name)).
// Empty when there are more than 64 arguments (the caller names the operator in its error).
std::optional<uint64_t> dispatchArgumentBitmap(const SchemaData& data);

}  // namespace dk::schema_data
