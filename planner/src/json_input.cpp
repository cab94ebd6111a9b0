#include "json_input.h"

#include <cmath>
#include <fstream>
#include <sstream>

#include "fail.h"

namespace loom::planner::detail {

namespace {

std::string dotted(const std::string& where, const char* key) {
  return where.empty() ? std::string(key) : where + "." + key;
}

}  // namespace

std::string read_text_file(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, ": cannot open ", what, " file");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

nlohmann::json parse_json(const std::string& text, const std::string& source) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    // e.byte is the 1-based offset where parsing stopped; turn it into line:column.
    const std::size_t stop = e.byte == 0 ? 0 : std::min<std::size_t>(e.byte - 1, text.size());
    int line = 1, column = 1;
    for (std::size_t i = 0; i < stop; ++i) {
      if (text[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    std::string reason = e.what();
    const auto colon = reason.rfind(": ");
    if (colon != std::string::npos) reason = reason.substr(colon + 2);
    fail(source, ":", line, ":", column, ": invalid JSON: ", reason);
  }
}

const nlohmann::json* find_field(const nlohmann::json& object, const char* key, const std::string& source,
                                 const std::string& where, bool required) {
  if (!object.is_object()) fail(source, ": ", where.empty() ? "the document" : where, " must be a JSON object");
  auto it = object.find(key);
  if (it == object.end()) {
    if (required) fail(source, ": missing field ", dotted(where, key));
    return nullptr;
  }
  return &*it;
}

double number_field(const nlohmann::json& object, const char* key, const std::string& source,
                    const std::string& where) {
  const nlohmann::json* value = find_field(object, key, source, where, true);
  if (!value->is_number() || !std::isfinite(value->get<double>()))
    fail(source, ": ", dotted(where, key), " must be a number");
  return value->get<double>();
}

double number_field_or(const nlohmann::json& object, const char* key, double fallback,
                       const std::string& source, const std::string& where) {
  if (!find_field(object, key, source, where, false)) return fallback;
  return number_field(object, key, source, where);
}

int int_field(const nlohmann::json& object, const char* key, const std::string& source, const std::string& where) {
  const nlohmann::json* value = find_field(object, key, source, where, true);
  if (!value->is_number_integer()) fail(source, ": ", dotted(where, key), " must be an integer");
  return value->get<int>();
}

std::string string_field_or(const nlohmann::json& object, const char* key, const std::string& fallback,
                            const std::string& source, const std::string& where) {
  const nlohmann::json* value = find_field(object, key, source, where, false);
  if (!value) return fallback;
  if (!value->is_string()) fail(source, ": ", dotted(where, key), " must be a string");
  return value->get<std::string>();
}

void reject_unknown_fields(const nlohmann::json& object, std::initializer_list<const char*> known,
                           const std::string& source, const std::string& where) {
  for (auto it = object.begin(); it != object.end(); ++it) {
    bool found = false;
    for (const char* k : known) found = found || it.key() == k;
    if (!found) fail(source, ": unknown field ", dotted(where, it.key().c_str()));
  }
}

}  // namespace loom::planner::detail
