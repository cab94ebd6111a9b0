// Cluster presets, the short spec grammar, cluster JSON, and the unit parser they share.
#include <loom/planner/cluster.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include <loom/base/error.h>
#include <loom/base/json_fields.h>

namespace loom::planner {

namespace {


struct Quantity {
  double number = 0;
  std::string unit;
};

// "130GB/s" → {130, "GB/s"}; false when there is no leading number.
bool split_quantity(const std::string& text, Quantity& out) {
  const char* begin = text.c_str();
  char* end = nullptr;
  out.number = std::strtod(begin, &end);
  if (end == begin || !std::isfinite(out.number)) return false;
  out.unit = std::string(end);
  while (!out.unit.empty() && out.unit.front() == ' ') out.unit.erase(out.unit.begin());
  return true;
}

// Strips a K/M/G/T (decimal) or Ki/Mi/Gi/Ti (binary) prefix from `unit` and returns its factor.
double take_prefix(std::string& unit) {
  static const struct {
    const char* prefix;
    double factor;
  } prefixes[] = {{"Ki", 1024.0}, {"Mi", 1048576.0}, {"Gi", 1073741824.0}, {"Ti", 1099511627776.0},
                  {"K", 1e3},     {"k", 1e3},        {"M", 1e6},          {"G", 1e9},
                  {"T", 1e12}};
  for (const auto& p : prefixes) {
    const std::string prefix = p.prefix;
    if (unit.compare(0, prefix.size(), prefix) == 0) {
      unit = unit.substr(prefix.size());
      return p.factor;
    }
  }
  return 1.0;
}

void expect_positive(double value, const std::string& text, const char* what) {
  if (!(value > 0)) LOOM_THROW("'", excerpt(text), "' is not a positive ", what);
}

// "2x8" → nodes and devices per node; false unless both are whole numbers (of any size: the
// range is validate()'s to check, without overflowing on the way).
bool split_shape(const std::string& shape, long long& nodes, long long& per_node) {
  const auto x = shape.find('x');
  if (x == std::string::npos || x == 0 || x + 1 == shape.size()) return false;
  auto whole = [](const std::string& digits, long long& out) {
    if (digits.empty() || digits.size() > 12 || digits.find_first_not_of("0123456789") != std::string::npos)
      return false;
    out = std::stoll(digits);
    return true;
  };
  return whole(shape.substr(0, x), nodes) && whole(shape.substr(x + 1), per_node);
}

void check_range(const std::string& source, const char* field, double value, double least, double most) {
  if (!(value >= least && value <= most))
    LOOM_THROW(source, ": ", field, " must be in [", least, ", ", most, "], got ", value);
}

}  // namespace

void validate(const Cluster& c, const std::string& source) {
  check_range(source, "nodes", c.nodes, 1, kMaxNodes);
  check_range(source, "devices_per_node", c.devices_per_node, 1, kMaxDevicesPerNode);
  check_range(source, "nodes x devices_per_node", static_cast<double>(c.nodes) * c.devices_per_node, 1,
              kMaxClusterDevices);
  check_range(source, "intra_bandwidth", c.intra_bandwidth, 1, kMaxBandwidth);
  check_range(source, "inter_bandwidth", c.inter_bandwidth, 1, kMaxBandwidth);
  check_range(source, "device_memory", c.device_memory, 1, kMaxDeviceMemory);
  check_range(source, "intra_latency", c.intra_latency_ms, 0, kMaxLatencyMs);
  check_range(source, "inter_latency", c.inter_latency_ms, 0, kMaxLatencyMs);
}

double parse_bytes(const std::string& text) {
  Quantity q;
  if (!split_quantity(text, q)) LOOM_THROW("cannot read '", excerpt(text), "' as a size (e.g. 16GB or 16GiB)");
  std::string unit = q.unit;
  const double factor = take_prefix(unit);
  if (unit == "b" || unit == "bit")
    LOOM_THROW("'", excerpt(text), "': memory sizes are in bytes (B), not bits (b)");
  if (!(unit.empty() || unit == "B"))
    LOOM_THROW("cannot read '", excerpt(text), "' as a size: unknown unit '", excerpt(q.unit), "' (use B, KB, MB, GB, GiB, ...)");
  expect_positive(q.number, text, "size");
  return q.number * factor;
}

double parse_bandwidth(const std::string& text) {
  Quantity q;
  if (!split_quantity(text, q)) LOOM_THROW("cannot read '", excerpt(text), "' as a bandwidth (e.g. 130GB/s or 25Gb/s)");
  std::string unit = q.unit;
  const double factor = take_prefix(unit);
  double scale = 0;
  if (unit.empty() || unit == "B/s" || unit == "Bps") scale = 1.0;
  if (unit == "b/s" || unit == "bps" || unit == "bit/s") scale = 1.0 / 8;
  if (scale == 0)
    LOOM_THROW("cannot read '", excerpt(text), "' as a bandwidth: unknown unit '", excerpt(q.unit),
                 "' (use GB/s for bytes, Gb/s or Gbps for bits)");
  expect_positive(q.number, text, "bandwidth");
  return q.number * factor * scale;
}

double parse_latency_ms(const std::string& text) {
  Quantity q;
  if (!split_quantity(text, q)) LOOM_THROW("cannot read '", excerpt(text), "' as a latency (e.g. 5us)");
  double scale = -1;
  if (q.unit == "s") scale = 1e3;
  if (q.unit == "ms") scale = 1;
  if (q.unit == "us") scale = 1e-3;
  if (q.unit == "ns") scale = 1e-6;
  if (q.unit.empty() && q.number == 0) scale = 0;
  if (scale < 0) LOOM_THROW("cannot read '", excerpt(text), "' as a latency: use s, ms, us or ns");
  if (q.number < 0) LOOM_THROW("'", excerpt(text), "' is a negative latency");
  return q.number * scale;
}

Cluster cluster_preset(const std::string& letter) {
  Cluster c;
  c.name = letter;
  if (letter == "A") {
    c.nodes = 2;
    c.devices_per_node = 8;
    c.intra_bandwidth = 130e9;
    c.inter_bandwidth = 25e9 / 8;
  } else if (letter == "B" || letter == "C") {
    c.nodes = 16;
    c.devices_per_node = 1;
    c.inter_bandwidth = (letter == "B" ? 25e9 : 10e9) / 8;
  } else {
    LOOM_THROW("unknown cluster preset '", excerpt(letter), "' (presets: A, B, C)");
  }
  c.device_memory = 16e9;
  return c;
}

Cluster parse_cluster_spec(const std::string& spec) {
  const auto colon = spec.find(':');
  const std::string shape = spec.substr(0, colon);
  Cluster c;
  try {
    if (shape == "A" || shape == "B" || shape == "C") {
      c = cluster_preset(shape);
    } else {
      long long nodes = 0, per_node = 0;
      if (!split_shape(shape, nodes, per_node) || nodes < 1 || per_node < 1)
        LOOM_THROW("expected NODESxDEVICES (e.g. 2x8) or a preset A, B, C before ':', got '", excerpt(shape), "'");
      if (nodes > kMaxNodes) LOOM_THROW("nodes must be in [1, ", kMaxNodes, "], got ", nodes);
      if (per_node > kMaxDevicesPerNode)
        LOOM_THROW("devices_per_node must be in [1, ", kMaxDevicesPerNode, "], got ", per_node);
      c.nodes = static_cast<int>(nodes);
      c.devices_per_node = static_cast<int>(per_node);
    }
    if (colon != std::string::npos) {
      std::stringstream items(spec.substr(colon + 1));
      std::string item;
      while (std::getline(items, item, ',')) {
        const auto eq = item.find('=');
        if (eq == std::string::npos) LOOM_THROW("expected key=value, got '", excerpt(item), "'");
        const std::string key = item.substr(0, eq), value = item.substr(eq + 1);
        if (key == "intra") c.intra_bandwidth = parse_bandwidth(value);
        else if (key == "inter") c.inter_bandwidth = parse_bandwidth(value);
        else if (key == "mem") c.device_memory = parse_bytes(value);
        else if (key == "intra_lat") c.intra_latency_ms = parse_latency_ms(value);
        else if (key == "inter_lat") c.inter_latency_ms = parse_latency_ms(value);
        else LOOM_THROW("unknown key '", excerpt(key), "' (keys: intra, inter, mem, intra_lat, inter_lat)");
      }
    }
    validate(c, "the cluster");
  } catch (const loom::Error& e) {
    LOOM_THROW("cluster spec '", excerpt(spec), "': ", e.what());
  }
  c.name = spec;
  return c;
}

Cluster read_cluster_json(const std::string& path) {
  const nlohmann::json doc = json::parse_json(json::read_text_file(path, "cluster"), path);
  json::reject_unknown_fields(doc, {"name", "nodes", "devices_per_node", "intra_bandwidth", "inter_bandwidth",
                                      "device_memory", "intra_latency", "inter_latency"},
                                path, "");
  Cluster c;
  c.name = json::string_field_or(doc, "name", path, path, "");
  c.nodes = json::int_field(doc, "nodes", path, "", 1, kMaxNodes);
  c.devices_per_node = json::int_field(doc, "devices_per_node", path, "", 1, kMaxDevicesPerNode);
  // Each quantity is either a number in base units or a string with a unit.
  auto quantity = [&](const char* key, double fallback, double (*parse)(const std::string&)) {
    const nlohmann::json* value = json::find_field(doc, key, path, "", false);
    if (!value) return fallback;
    if (value->is_string()) {
      try {
        return parse(value->get<std::string>());
      } catch (const loom::Error& e) {
        LOOM_THROW(path, ": ", key, ": ", e.what());
      }
    }
    if (!value->is_number() || !(value->get<double>() >= 0))
      LOOM_THROW(path, ": ", key, " must be a non-negative number or a string with a unit");
    return value->get<double>();
  };
  c.intra_bandwidth = quantity("intra_bandwidth", c.intra_bandwidth, parse_bandwidth);
  c.inter_bandwidth = quantity("inter_bandwidth", c.inter_bandwidth, parse_bandwidth);
  c.device_memory = quantity("device_memory", c.device_memory, parse_bytes);
  c.intra_latency_ms = quantity("intra_latency", 0, parse_latency_ms);
  c.inter_latency_ms = quantity("inter_latency", 0, parse_latency_ms);
  if (c.intra_bandwidth <= 0 || c.inter_bandwidth <= 0 || c.device_memory <= 0)
    LOOM_THROW(path, ": bandwidths and device_memory must be positive");
  validate(c, path);
  return c;
}

Cluster parse_cluster(const std::string& spec_or_path) {
  std::error_code ec;
  if (std::filesystem::is_regular_file(spec_or_path, ec)) return read_cluster_json(spec_or_path);
  return parse_cluster_spec(spec_or_path);
}

std::string describe(const Cluster& c) {
  char text[160];
  std::snprintf(text, sizeof text, "%dx%d, intra %.4g GB/s, inter %.4g GB/s (%.4g Gb/s), %.4g GB/device", c.nodes,
                c.devices_per_node, c.intra_bandwidth / 1e9, c.inter_bandwidth / 1e9, c.inter_bandwidth * 8 / 1e9,
                c.device_memory / 1e9);
  return text;
}

}  // namespace loom::planner
