// Reading user JSON files (profiles, clusters, plans) with messages that name the file, and the
// line and column of a syntax error or the path of a bad field ("layers[3].forward_ms").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <loom/schedule/text.h>

namespace loom::planner::detail {

using schedule::excerpt;  // user text quoted in messages, cut to 80 characters

std::string read_text_file(const std::string& path, const char* what);
// loom::parse_json_depth_limited (base/json_input.h: deeper than 512 levels is refused) with
// syntax errors as "source:line:column: invalid JSON: reason".
nlohmann::json parse_json(const std::string& text, const std::string& source);

// A field of `object` (which lives at `where` in `source`); `required` fields that are missing,
// and fields of the wrong type, throw loom::Error naming source and where.key.
const nlohmann::json* find_field(const nlohmann::json& object, const char* key, const std::string& source,
                                 const std::string& where, bool required);
double number_field(const nlohmann::json& object, const char* key, const std::string& source,
                    const std::string& where);
double number_field_or(const nlohmann::json& object, const char* key, double fallback,
                       const std::string& source, const std::string& where);
// Integers are read as 64-bit and must lie in [min, max] (errors say the field and the range),
// so a value beyond 32 bits is refused instead of cut (2^32 + 64 is not 64).
std::int64_t integer_value(const nlohmann::json& value, const std::string& source, const std::string& field,
                           std::int64_t min, std::int64_t max);
int int_field(const nlohmann::json& object, const char* key, const std::string& source, const std::string& where,
              int min, int max);
std::string string_field_or(const nlohmann::json& object, const char* key, const std::string& fallback,
                            const std::string& source, const std::string& where);
void reject_unknown_fields(const nlohmann::json& object, std::initializer_list<const char*> known,
                           const std::string& source, const std::string& where);
void reject_unknown_fields(const nlohmann::json& object, const std::vector<std::string>& known,
                           const std::string& source, const std::string& where);

}  // namespace loom::planner::detail
