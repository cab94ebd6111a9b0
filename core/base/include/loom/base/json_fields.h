// The one checked reader of loom's JSON inputs (plans, profiles, clusters, checkpoint manifests and
// stage files): a file read as text (regular files only), parsed with the depth limit of
// json_input.h and syntax errors as "source:line:column: invalid JSON: reason", and fields read
// with messages that name the file and the field's path ("plan.json: stages[0].ranks[0] must be an
// integer in [0, 16383], got 4294967296"). `where` is the path of `object` in the document ("" for
// the top level).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <initializer_list>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <loom/base/error.h>
#include <loom/base/files.h>
#include <loom/base/json_input.h>

namespace loom::json {


namespace detail {

inline std::string dotted(const std::string& where, const char* key) {
  return where.empty() ? std::string(key) : where + "." + key;
}

// The library's message without its "[json.exception.xxx.nnn] " prefix.
inline std::string reason_of(const nlohmann::json::exception& e) {
  std::string reason = e.what();
  const auto bracket = reason.find("] ");
  return bracket == std::string::npos ? reason : reason.substr(bracket + 2);
}

}  // namespace detail

inline std::string read_text_file(const std::string& path, const char* what) {
  // A FIFO would block the open for ever, /dev/zero would never end: only regular files.
  check_regular_file(path, (std::string("a ") + what + " file").c_str());
  std::ifstream in(path, std::ios::binary);
  if (!in) LOOM_THROW(path, ": cannot open ", what, " file");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

inline nlohmann::json parse_json(const std::string& text, const std::string& source) {
  try {
    return parse_json_depth_limited(text, source);  // too deep: loom::Error naming source
  } catch (const nlohmann::json::parse_error& e) {
    // e.byte is the 1-based offset where parsing stopped.
    std::string reason = e.what();
    const auto colon = reason.rfind(": ");
    if (colon != std::string::npos) reason = reason.substr(colon + 2);
    LOOM_THROW(source, ":", text_position(text, e.byte == 0 ? 0 : e.byte - 1), ": invalid JSON: ", reason);
  } catch (const nlohmann::json::exception& e) {
    // A number beyond double range ("number overflow parsing '1e400'") has no offset: find the
    // quoted literal in the text.
    const std::string reason = detail::reason_of(e);
    const auto open = reason.find('\''), close = reason.rfind('\'');
    std::size_t at = std::string::npos;
    if (open != std::string::npos && close > open) at = text.find(reason.substr(open + 1, close - open - 1));
    if (at == std::string::npos) LOOM_THROW(source, ": invalid JSON: ", reason);
    LOOM_THROW(source, ":", text_position(text, at), ": invalid JSON: ", reason);
  }
}

inline const nlohmann::json* find_field(const nlohmann::json& object, const char* key, const std::string& source,
                                 const std::string& where, bool required) {
  if (!object.is_object()) LOOM_THROW(source, ": ", where.empty() ? "the document" : where, " must be a JSON object");
  auto it = object.find(key);
  if (it == object.end()) {
    if (required) LOOM_THROW(source, ": missing field ", detail::dotted(where, key));
    return nullptr;
  }
  return &*it;
}

inline double number_field(const nlohmann::json& object, const char* key, const std::string& source,
                    const std::string& where) {
  const nlohmann::json* value = find_field(object, key, source, where, true);
  if (!value->is_number() || !std::isfinite(value->get<double>()))
    LOOM_THROW(source, ": ", detail::dotted(where, key), " must be a number");
  return value->get<double>();
}

inline double number_field_or(const nlohmann::json& object, const char* key, double fallback,
                       const std::string& source, const std::string& where) {
  if (!find_field(object, key, source, where, false)) return fallback;
  return number_field(object, key, source, where);
}

inline std::int64_t integer_value(const nlohmann::json& value, const std::string& source, const std::string& field,
                           std::int64_t min, std::int64_t max) {
  bool in_range = false;
  if (value.is_number_unsigned()) {  // beyond int64 when above its max: compare unsigned
    const std::uint64_t u = value.get<std::uint64_t>();
    in_range = max >= 0 && u <= static_cast<std::uint64_t>(max) && (min <= 0 || u >= static_cast<std::uint64_t>(min));
  } else if (value.is_number_integer()) {
    const std::int64_t i = value.get<std::int64_t>();
    in_range = i >= min && i <= max;
  }
  if (!in_range) LOOM_THROW(source, ": ", field, " must be an integer in [", min, ", ", max, "], got ", value.dump());
  return value.get<std::int64_t>();
}

inline int int_field(const nlohmann::json& object, const char* key, const std::string& source, const std::string& where,
              int min, int max) {
  const nlohmann::json* value = find_field(object, key, source, where, true);
  return static_cast<int>(integer_value(*value, source, detail::dotted(where, key), min, max));
}

inline std::string string_field_or(const nlohmann::json& object, const char* key, const std::string& fallback,
                            const std::string& source, const std::string& where) {
  const nlohmann::json* value = find_field(object, key, source, where, false);
  if (!value) return fallback;
  if (!value->is_string()) LOOM_THROW(source, ": ", detail::dotted(where, key), " must be a string");
  return value->get<std::string>();
}

inline void reject_unknown_fields(const nlohmann::json& object, const std::vector<std::string>& known,
                           const std::string& source, const std::string& where) {
  if (!object.is_object()) LOOM_THROW(source, ": ", where.empty() ? "the document" : where, " must be a JSON object");
  for (auto it = object.begin(); it != object.end(); ++it)
    if (std::find(known.begin(), known.end(), it.key()) == known.end())
      LOOM_THROW(source, ": unknown field ", detail::dotted(where, excerpt(it.key()).c_str()));
}

inline void reject_unknown_fields(const nlohmann::json& object, std::initializer_list<const char*> known,
                           const std::string& source, const std::string& where) {
  reject_unknown_fields(object, std::vector<std::string>(known.begin(), known.end()), source, where);
}

// An integer field of [min, max] (64 bits), required.
inline std::int64_t integer_field(const nlohmann::json& object, const char* key, const std::string& source,
                                  const std::string& where, std::int64_t min, std::int64_t max) {
  return integer_value(*find_field(object, key, source, where, true), source, detail::dotted(where, key), min, max);
}

}  // namespace loom::json
