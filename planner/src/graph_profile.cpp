// graph.txt → Profile: parse node and edge lines, order the nodes topologically, and give each
// position of the chain the bytes of every tensor that crosses the cut after it.
#include <loom/planner/graph_profile.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <queue>
#include <regex>
#include <sstream>
#include <unordered_map>

#include <loom/schedule/text.h>

#include <loom/base/error.h>
#include <loom/base/files.h>

namespace loom::planner {

namespace {

using schedule::excerpt;

struct Node {
  std::string name;         // "node12"
  std::string description;  // "LSTM(1024, 1024)"
  double forward_ms = 0, backward_ms = 0, activation_bytes = 0, parameter_bytes = 0;
  int line = 0;
  std::vector<int> successors;
};

std::string trim(const std::string& s) {
  const auto first = s.find_first_not_of(" \t\r");
  if (first == std::string::npos) return "";
  const auto last = s.find_last_not_of(" \t\r");
  return s.substr(first, last - first + 1);
}

class GraphParser {
 public:
  GraphParser(const std::string& source) : source_(source) {}

  void line(const std::string& raw, int number) {
    line_ = number;
    const std::string text = trim(raw);
    if (text.empty()) return;
    const bool indented = raw[0] == ' ' || raw[0] == '\t';
    if (indented) {
      edge(text);
    } else {
      node(text);
    }
  }

  std::vector<Node>& nodes() { return nodes_; }
  [[noreturn]] void error(const std::string& message) const { LOOM_THROW(source_, ":", line_, ": ", message); }

  // Resolves edges once every node is known (node lines may follow the edges that use them).
  void connect();

 private:
  void node(const std::string& text) {
    const auto first = text.find(" -- ");
    const auto last = text.rfind(" -- ");
    if (first == std::string::npos || first == last)
      error("expected 'nodeN -- description -- forward_compute_time=..., ...' or an indented edge line");
    Node n;
    n.name = trim(text.substr(0, first));
    n.description = trim(text.substr(first + 4, last - first - 4));
    n.line = line_;
    if (n.name.empty() || n.name.find(' ') != std::string::npos) error("bad node name '" + excerpt(n.name) + "'");
    if (index_.count(n.name)) error("node " + excerpt(n.name) + " is defined twice");
    bool have[4] = {false, false, false, false};
    std::stringstream fields(text.substr(last + 4));
    std::string field;
    while (std::getline(fields, field, ',')) {
      field = trim(field);
      if (field.empty()) continue;
      const auto eq = field.find('=');
      if (eq == std::string::npos) error("expected key=value, got '" + excerpt(field) + "'");
      const std::string key = trim(field.substr(0, eq)), value = trim(field.substr(eq + 1));
      if (key == "forward_compute_time") n.forward_ms = number(key, value), have[0] = true;
      else if (key == "backward_compute_time") n.backward_ms = number(key, value), have[1] = true;
      else if (key == "activation_size") n.activation_bytes = sum_of_list(key, value), have[2] = true;
      else if (key == "parameter_size") n.parameter_bytes = number(key, value), have[3] = true;
    }
    static const char* names[] = {"forward_compute_time", "backward_compute_time", "activation_size",
                                  "parameter_size"};
    for (int i = 0; i < 4; ++i)
      if (!have[i]) error("node " + excerpt(n.name) + " has no " + names[i]);
    index_[n.name] = static_cast<int>(nodes_.size());
    nodes_.push_back(std::move(n));
  }

  void edge(const std::string& text) {
    const auto sep = text.find(" -- ");
    if (sep == std::string::npos || text.find(" -- ", sep + 4) != std::string::npos)
      error("expected an edge line 'nodeA -- nodeB'");
    pending_edges_.push_back({trim(text.substr(0, sep)), trim(text.substr(sep + 4)), line_});
  }

  // Times (keys ending in _time) are in [0, kMaxLayerMs], sizes in [0, kMaxLayerBytes].
  double number(const std::string& key, const std::string& value) {
    const char* begin = value.c_str();
    char* end = nullptr;
    const double x = std::strtod(begin, &end);
    const bool time = key.size() > 5 && key.compare(key.size() - 5, 5, "_time") == 0;
    const double most = time ? kMaxLayerMs : kMaxLayerBytes;
    if (end == begin || trim(end) != "" || !std::isfinite(x) || x < 0 || x > most)
      error(loom::detail::concat(excerpt(key), "=", excerpt(value),
                                 " is not a non-negative number of at most ", most, time ? " ms" : " bytes"));
    return x;
  }

  double sum_of_list(const std::string& key, const std::string& value) {
    if (value.empty() || value.front() != '[') return number(key, value);
    if (value.back() != ']') error(excerpt(key) + "=" + excerpt(value) + ": a list must end with ']'");
    double sum = 0;
    std::stringstream items(value.substr(1, value.size() - 2));
    std::string item;
    while (std::getline(items, item, ';')) sum += number(key, trim(item));
    return sum;
  }

  struct PendingEdge {
    std::string from, to;
    int line;
  };
  std::string source_;
  int line_ = 0;
  std::vector<Node> nodes_;
  std::unordered_map<std::string, int> index_;
  std::vector<PendingEdge> pending_edges_;
};

void GraphParser::connect() {
  for (const auto& e : pending_edges_) {
    line_ = e.line;
    auto from = index_.find(e.from), to = index_.find(e.to);
    if (from == index_.end()) error("edge from unknown node " + excerpt(e.from));
    if (to == index_.end()) error("edge to unknown node " + excerpt(e.to));
    if (from->second == to->second) error("edge from " + excerpt(e.from) + " to itself");
    auto& succ = nodes_[from->second].successors;
    if (std::find(succ.begin(), succ.end(), to->second) == succ.end()) succ.push_back(to->second);
  }
}

// Sort key of a node: its number when every node is called nodeN, else its line.
std::vector<long> node_keys(const std::vector<Node>& nodes) {
  static const std::regex numbered("node([0-9]{1,9})");
  std::vector<long> keys(nodes.size());
  std::smatch m;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (!std::regex_match(nodes[i].name, m, numbered)) {
      for (std::size_t j = 0; j < nodes.size(); ++j) keys[j] = nodes[j].line;
      return keys;
    }
    keys[i] = std::stol(m[1]);
  }
  return keys;
}

std::vector<int> topological_order(const std::vector<Node>& nodes, const std::string& source) {
  const std::vector<long> keys = node_keys(nodes);
  std::vector<int> indegree(nodes.size(), 0);
  for (const Node& n : nodes)
    for (int s : n.successors) ++indegree[s];
  auto later = [&](int a, int b) { return keys[a] > keys[b]; };
  std::priority_queue<int, std::vector<int>, decltype(later)> ready(later);
  for (std::size_t i = 0; i < nodes.size(); ++i)
    if (indegree[i] == 0) ready.push(static_cast<int>(i));
  std::vector<int> order;
  while (!ready.empty()) {
    const int n = ready.top();
    ready.pop();
    order.push_back(n);
    for (int s : nodes[n].successors)
      if (--indegree[s] == 0) ready.push(s);
  }
  if (order.size() != nodes.size()) {
    for (std::size_t i = 0; i < nodes.size(); ++i)
      if (indegree[i] > 0)
        LOOM_THROW(source, ":", nodes[i].line, ": the graph has a cycle through ", excerpt(nodes[i].name));
  }
  return order;
}

std::string model_name(const std::string& path) {
  std::string stem = std::filesystem::path(path).stem().string();
  static const std::regex pbs("(.*)-pbs-[0-9]+(.*)");
  std::smatch m;
  if (std::regex_match(stem, m, pbs)) stem = m[1].str() + m[2].str();
  return stem;
}

double microbatch_from_name(const std::string& path) {
  static const std::regex pbs(".*-pbs-([0-9]+).*");
  std::smatch m;
  const std::string name = std::filesystem::path(path).filename().string();
  if (std::regex_match(name, m, pbs)) return std::stod(m[1]);
  return 1;
}

}  // namespace

Profile parse_graph_profile(std::istream& in, const std::string& source, double microbatch) {
  GraphParser parser(source);
  std::string raw;
  int number = 0;
  while (std::getline(in, raw)) parser.line(raw, ++number);
  parser.connect();
  std::vector<Node>& nodes = parser.nodes();
  if (nodes.empty()) LOOM_THROW(source, ": no node lines (expected 'nodeN -- description -- ...')");

  const std::vector<int> order = topological_order(nodes, source);
  std::vector<int> position(nodes.size());
  for (std::size_t p = 0; p < order.size(); ++p) position[order[p]] = static_cast<int>(p);

  // A node's output crosses the cuts from its own position up to just before its last consumer.
  const int n = static_cast<int>(order.size());
  std::vector<int> last_use(n);
  for (int p = 0; p < n; ++p) {
    last_use[p] = p;
    for (int s : nodes[order[p]].successors) last_use[p] = std::max(last_use[p], position[s]);
  }

  Profile profile;
  profile.source = source;
  profile.model = model_name(source);
  profile.microbatch = microbatch > 0 ? microbatch : microbatch_from_name(source);
  // The bytes crossing each cut, in O(n): node q's output adds to the cuts q .. last_use[q] - 1
  // (a sum over every earlier node per cut took minutes at 60,000 nodes).
  std::vector<double> starts(n + 1, 0), ends(n + 1, 0);
  std::vector<int> opened(n + 1, 0), closed(n + 1, 0);
  for (int q = 0; q < n; ++q) {
    if (last_use[q] <= q) continue;
    starts[q] += nodes[order[q]].activation_bytes;
    ends[last_use[q]] += nodes[order[q]].activation_bytes;
    ++opened[q];
    ++closed[last_use[q]];
  }
  double crossing = 0;
  int open = 0;  // outputs crossing the cut: with none, exactly 0 bytes (no rounding residue)
  for (int p = 0; p < n; ++p) {
    const Node& node = nodes[order[p]];
    crossing += starts[p] - ends[p];
    open += opened[p] - closed[p];
    if (open == 0) crossing = 0;
    LayerProfile layer;
    layer.name = node.name + " " + node.description;
    layer.cost = {node.forward_ms, node.backward_ms, node.activation_bytes, crossing};
    layer.parameter_bytes = node.parameter_bytes;
    profile.layers.push_back(std::move(layer));
  }
  validate(profile);
  return profile;
}

Profile read_graph_profile(const std::string& path, double microbatch) {
  check_regular_file(path, "a profile file");  // not a FIFO or a device, which would block or never end
  std::ifstream in(path);
  if (!in) LOOM_THROW(path, ": cannot open profile file");
  return parse_graph_profile(in, path, microbatch);
}

}  // namespace loom::planner
