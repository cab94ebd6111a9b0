// The one parser of every JSON file loom reads (plans, profiles, clusters, checkpoint manifests and
// stage files, safetensors headers): nlohmann::json with nesting limited to kMaxJsonDepth.
//
// nlohmann's parser is iterative, but copying, comparing and dumping a value recurse: a document
// nested 100,000 levels deep ([[[[...]]]]) parses, then overflows the stack (SIGSEGV) in the code
// that uses it. So the depth is checked while parsing, through the parser callback, and a deeper
// document is refused before any value of it is built: "plan.json:1:513: JSON nested deeper than
// 512 levels". loom's own files nest 5 levels at most (plans; profiles, manifests, stage files
// and safetensors headers 2 or 3), so 512 refuses nothing real and keeps the recursion shallow.
// Syntax errors are left as nlohmann's exceptions, for each reader to word. Header-only like
// error.h, so the planner (no loom::core) uses it too.
#pragma once

#include <cstddef>
#include <istream>
#include <iterator>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include <loom/base/error.h>

namespace loom {

// Containers inside containers: a top-level [] is level 1; level 513 is refused.
inline constexpr int kMaxJsonDepth = 512;

// "line:column" (both 1-based) of the 0-based byte `offset` of `text`.
inline std::string text_position(std::string_view text, std::size_t offset) {
  std::size_t line = 1, column = 1;
  for (std::size_t i = 0; i < offset && i < text.size(); ++i) {
    column = text[i] == '\n' ? 1 : column + 1;
    line += text[i] == '\n' ? 1 : 0;
  }
  return std::to_string(line) + ":" + std::to_string(column);
}

namespace detail {
struct JsonTooDeep {};  // thrown by the parser callback, caught by parse_json_depth_limited

// Byte offset of the first '[' or '{' (outside strings) that opens level `depth` + 1: where the
// parser stopped, since everything before it parsed.
inline std::size_t json_depth_offset(std::string_view text, int depth) {
  int level = 0;
  bool in_string = false, escaped = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (escaped) {
      escaped = false;
    } else if (in_string) {
      escaped = c == '\\';
      in_string = c != '"';
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++level > depth) return i;
    } else if (c == ']' || c == '}') {
      --level;
    }
  }
  return text.size();
}
}  // namespace detail

// Parses `text`; `source` names it in errors ("plan.json"). Nesting deeper than kMaxJsonDepth
// throws loom::Error "source:line:column: JSON nested deeper than 512 levels"; invalid JSON
// throws nlohmann::json::exception (parse_error.byte says where), for the caller to word.
inline nlohmann::json parse_json_depth_limited(const std::string& text, const std::string& source) {
  // The callback's depth is the number of containers around the one being opened.
  const auto limit = [](int depth, nlohmann::json::parse_event_t event, nlohmann::json&) {
    const bool opens = event == nlohmann::json::parse_event_t::object_start ||
                       event == nlohmann::json::parse_event_t::array_start;
    if (opens && depth >= kMaxJsonDepth) throw detail::JsonTooDeep{};
    return true;
  };
  try {
    return nlohmann::json::parse(text, limit);
  } catch (const detail::JsonTooDeep&) {
    LOOM_THROW(source, ":", text_position(text, detail::json_depth_offset(text, kMaxJsonDepth)),
               ": JSON nested deeper than ", kMaxJsonDepth, " levels");
  }
}

// The same for a whole stream (a file opened by the caller).
inline nlohmann::json parse_json_depth_limited(std::istream& in, const std::string& source) {
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return parse_json_depth_limited(text, source);
}

}  // namespace loom
