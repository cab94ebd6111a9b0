// safetensors reader and writer (format described in the header). The reader trusts nothing:
// header length, JSON, dtypes, shapes and data offsets are all checked against the file size.
#include <loom/layers/safetensors.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include <loom/base/error.h>
#include <loom/base/files.h>
#include <loom/base/json_input.h>

namespace loom::safetensors {

namespace {

const char* file_dtype(DType dtype) {
  switch (dtype) {
    case DType::f32: return "F32";
    case DType::f64: return "F64";
    case DType::bf16: return "BF16";
    case DType::f16: return "F16";
    case DType::i32: return "I32";
    case DType::i64: return "I64";
  }
  return "?";
}

bool parse_file_dtype(const std::string& name, DType& dtype) {
  static const std::pair<const char*, DType> table[] = {{"F32", DType::f32},   {"F64", DType::f64},
                                                        {"BF16", DType::bf16}, {"F16", DType::f16},
                                                        {"I32", DType::i32},   {"I64", DType::i64}};
  for (const auto& [text, value] : table)
    if (name == text) {
      dtype = value;
      return true;
    }
  return false;
}

}  // namespace

std::uint64_t fnv1a64(const void* data, std::size_t bytes, std::uint64_t hash) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < bytes; ++i) {
    hash ^= p[i];
    hash *= 0x100000001b3ull;
  }
  return hash;
}

bool File::has(const std::string& name) const {
  return std::any_of(tensors.begin(), tensors.end(), [&](const auto& entry) { return entry.first == name; });
}

const Tensor& File::get(const std::string& name) const {
  for (const auto& [n, t] : tensors)
    if (n == name) return t;
  LOOM_THROW(path, ": no tensor named '", name, "'");
}

void save(const std::string& path, const NamedTensors& tensors, const Metadata& metadata) {
  nlohmann::json header = nlohmann::json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::set<std::string> names;
  std::vector<Tensor> host;
  std::uint64_t offset = 0;
  for (const auto& [name, tensor] : tensors) {
    LOOM_CHECK(!name.empty() && name != "__metadata__", path, ": invalid tensor name '", name, "'");
    LOOM_CHECK(names.insert(name).second, path, ": tensor name '", name, "' appears twice");
    LOOM_CHECK(tensor.defined(), path, ": tensor '", name, "' is undefined");
    require_host(tensor, "safetensors::save of '" + name + "' to " + path);
    const Tensor& h = tensor;
    const std::uint64_t bytes = h.nbytes();
    header[name] = {{"dtype", file_dtype(h.dtype())}, {"shape", h.shape().vec()}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
    host.push_back(h);
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // align the data section to 8 bytes
  // Written under PATH.tmp and renamed, so a crash or a full disk never leaves half a file at PATH;
  // errors name the file and the OS reason ("No space left on device").
  AtomicFile out(path);
  const std::uint64_t length = text.size();
  unsigned char length_bytes[8];
  for (int i = 0; i < 8; ++i) length_bytes[i] = static_cast<unsigned char>(length >> (8 * i));
  out.write(length_bytes, 8);
  out.write(text);
  for (const Tensor& h : host)
    if (h.nbytes() > 0) out.write(h.raw_data(), static_cast<std::size_t>(h.nbytes()));
  out.commit();
}

namespace {
// A tensor's shape from the header. The element count is checked against what the data section
// can hold (`max_elements`) before each multiplication: [2^32, 2^32] would overflow 64 bits.
Shape read_shape(const nlohmann::json& shape, const std::string& path, const std::string& name,
                 std::uint64_t max_elements) {
  std::vector<std::int64_t> dims;
  std::uint64_t elements = 1;
  for (const auto& d : shape) {
    LOOM_CHECK(d.is_number_integer() && d.get<std::int64_t>() >= 0, path, ": tensor '", name, "' has a bad shape ",
               shape.dump());
    const auto dim = static_cast<std::uint64_t>(d.get<std::int64_t>());
    LOOM_CHECK(dim == 0 || elements <= max_elements / dim, path, ": tensor '", name, "' shape ", shape.dump(),
               " has more elements than the file's data section holds (", max_elements, ")");
    elements *= dim;
    dims.push_back(static_cast<std::int64_t>(dim));
  }
  return Shape(dims);
}
}  // namespace

namespace {
// The header length and JSON of an open file, checked against its size.
nlohmann::json read_header_json(std::ifstream& in, const std::string& path, std::uint64_t& file_size,
                                std::uint64_t& data_start) {
  file_size = static_cast<std::uint64_t>(in.tellg());
  in.seekg(0);
  LOOM_CHECK(file_size >= 8, path, ": truncated safetensors file (", file_size, " bytes, no header length)");
  unsigned char length_bytes[8];
  in.read(reinterpret_cast<char*>(length_bytes), 8);
  std::uint64_t header_length = 0;
  for (int i = 0; i < 8; ++i) header_length |= static_cast<std::uint64_t>(length_bytes[i]) << (8 * i);
  LOOM_CHECK(header_length <= file_size - 8, path, ": truncated or not a safetensors file (header length ",
             header_length, " but only ", file_size - 8, " bytes follow)");
  std::string text(header_length, '\0');
  in.read(text.data(), static_cast<std::streamsize>(header_length));
  LOOM_CHECK(in.good(), path, ": read error in the header");
  data_start = 8 + header_length;
  nlohmann::json header;
  try {
    header = parse_json_depth_limited(text, path + " header");
  } catch (const nlohmann::json::exception& e) {
    LOOM_THROW(path, ": header is not valid JSON (", e.what(), ")");
  }
  LOOM_CHECK(header.is_object(), path, ": header is not a JSON object");
  return header;
}

// One tensor's header entry, checked against the data section's size.
Entry read_entry(const std::string& path, const std::string& name, const nlohmann::json& value, std::uint64_t data_size) {
  LOOM_CHECK(value.is_object() && value.contains("dtype") && value.contains("shape") && value.contains("data_offsets"),
             path, ": tensor '", name, "' lacks dtype, shape or data_offsets");
  Entry entry;
  entry.name = name;
  const auto& dtype = value["dtype"];
  LOOM_CHECK(dtype.is_string() && parse_file_dtype(dtype.get<std::string>(), entry.dtype), path, ": tensor '", name,
             "' has unsupported dtype ", dtype.dump());
  const auto& shape = value["shape"];
  LOOM_CHECK(shape.is_array() && shape.size() <= static_cast<std::size_t>(Shape::kMaxRank), path, ": tensor '", name,
             "' has a bad shape ", shape.dump());
  entry.shape = read_shape(shape, path, name, data_size / dtype_size(entry.dtype));
  const auto& offsets = value["data_offsets"];
  LOOM_CHECK(offsets.is_array() && offsets.size() == 2 && offsets[0].is_number_unsigned() && offsets[1].is_number_unsigned(),
             path, ": tensor '", name, "' has bad data_offsets ", offsets.dump());
  entry.begin = offsets[0].get<std::uint64_t>();
  entry.end = offsets[1].get<std::uint64_t>();
  const std::uint64_t expected = static_cast<std::uint64_t>(entry.shape.numel()) * dtype_size(entry.dtype);
  LOOM_CHECK(entry.begin <= entry.end && entry.end - entry.begin == expected, path, ": tensor '", name,
             "' data_offsets [", entry.begin, ", ", entry.end, "] do not match shape ", entry.shape.str(), " of ",
             dtype.get<std::string>(), " (", expected, " bytes)");
  LOOM_CHECK(entry.end <= data_size, path, ": truncated file: tensor '", name, "' ends at byte ", entry.end,
             " of the data section but it holds only ", data_size, " bytes");
  return entry;
}

std::ifstream open_file(const std::string& path) {
  check_regular_file(path, "a safetensors file");  // a FIFO or a device would block or never end
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  LOOM_CHECK(in.good(), path, ": cannot open for reading (", std::strerror(errno), ")");
  return in;
}

Header read_header(std::ifstream& in, const std::string& path) {
  Header result;
  result.path = path;
  std::uint64_t file_size = 0;
  const nlohmann::json header = read_header_json(in, path, file_size, result.data_start);
  const std::uint64_t data_size = file_size - result.data_start;
  for (const auto& [name, value] : header.items()) {
    if (name != "__metadata__") {
      result.entries.push_back(read_entry(path, name, value, data_size));
      continue;
    }
    LOOM_CHECK(value.is_object(), path, ": __metadata__ is not an object");
    for (const auto& [key, v] : value.items()) {
      LOOM_CHECK(v.is_string(), path, ": __metadata__.", key, " is not a string");
      result.metadata[key] = v.get<std::string>();
    }
  }
  auto& entries = result.entries;
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.begin < b.begin; });
  for (std::size_t i = 1; i < entries.size(); ++i)
    LOOM_CHECK(entries[i].begin >= entries[i - 1].end, path, ": tensors '", entries[i - 1].name, "' and '",
               entries[i].name, "' overlap");
  return result;
}

Tensor read_tensor(std::ifstream& in, const Header& header, const Entry& entry) {
  Tensor t = Tensor::empty(entry.shape, entry.dtype);
  if (t.nbytes() > 0) {
    in.seekg(static_cast<std::streamoff>(header.data_start + entry.begin));
    in.read(static_cast<char*>(t.raw_data()), static_cast<std::streamsize>(t.nbytes()));
    LOOM_CHECK(in.good(), header.path, ": read error in tensor '", entry.name, "'");
  }
  return t;
}
}  // namespace

const Entry* Header::find(const std::string& name) const {
  for (const Entry& entry : entries)
    if (entry.name == name) return &entry;
  return nullptr;
}

Header read_header(const std::string& path) {
  std::ifstream in = open_file(path);
  return read_header(in, path);
}

Tensor read_tensor(const Header& header, const Entry& entry) {
  std::ifstream in = open_file(header.path);
  return read_tensor(in, header, entry);
}

File load(const std::string& path) {
  std::ifstream in = open_file(path);
  const Header header = read_header(in, path);
  File file;
  file.path = path;
  file.metadata = header.metadata;
  for (const Entry& entry : header.entries) file.tensors.emplace_back(entry.name, read_tensor(in, header, entry));
  return file;
}

}  // namespace loom::safetensors
