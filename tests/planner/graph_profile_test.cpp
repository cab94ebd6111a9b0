#include <catch2/catch.hpp>

#include <filesystem>
#include <sstream>

#include <loom/base/error.h>
#include <loom/planner/graph_profile.h>
#include <loom/planner/profile_json.h>

#include "test_files.h"

using namespace loom::planner;

namespace {

Profile parse(const std::string& text, const std::string& source = "g-pbs-4.txt") {
  std::istringstream in(text);
  return parse_graph_profile(in, source);
}

}  // namespace

TEST_CASE("a chain keeps its order and each cut carries the producer's activation") {
  const Profile p = parse(
      "node2 -- b -- forward_compute_time=2, backward_compute_time=3, activation_size=20, parameter_size=7\n"
      "node1 -- a -- forward_compute_time=1.5, backward_compute_time=0, activation_size=10, parameter_size=0\n"
      "node3 -- c -- forward_compute_time=4, backward_compute_time=5, activation_size=[1; 2; 3], parameter_size=9\n"
      "\tnode1 -- node2\n"
      "  node2 -- node3\n");
  REQUIRE(p.size() == 3);
  CHECK(p.microbatch == 4);
  CHECK(p.model == "g");
  CHECK(p.layers[0].name == "node1 a");
  CHECK(p.layers[0].cost.forward_ms == 1.5);
  CHECK(p.layers[0].cost.boundary_bytes == 10);
  CHECK(p.layers[1].cost.boundary_bytes == 20);
  CHECK(p.layers[2].cost.activation_bytes == 6);  // a list is summed
  CHECK(p.layers[2].cost.boundary_bytes == 0);    // nothing after the last node
  CHECK(p.layers[1].parameter_bytes == 7);
}

TEST_CASE("a DAG is ordered by node number and a cut carries every tensor crossing it") {
  // 1 → 2 → 4 → 5, 1 → 3 → 5, 1 → 5 (a skip), 3 has two consumers after position 2.
  //   order 1 2 3 4 5; cut after 1: {1}; after 2: {1, 2}; after 3: {1, 2, 3}; after 4: {1, 3, 4}.
  const Profile p = parse(
      "node5 -- e -- forward_compute_time=1, backward_compute_time=1, activation_size=10000, parameter_size=0\n"
      "node4 -- d -- forward_compute_time=1, backward_compute_time=1, activation_size=1000, parameter_size=0\n"
      "node3 -- c -- forward_compute_time=1, backward_compute_time=1, activation_size=100, parameter_size=0\n"
      "node2 -- b -- forward_compute_time=1, backward_compute_time=1, activation_size=10, parameter_size=0\n"
      "node1 -- a -- forward_compute_time=1, backward_compute_time=1, activation_size=1, parameter_size=0\n"
      "\tnode1 -- node2\n\tnode2 -- node4\n\tnode4 -- node5\n\tnode1 -- node3\n\tnode3 -- node5\n"
      "\tnode1 -- node5\n\tnode3 -- node4\n");
  REQUIRE(p.size() == 5);
  for (int i = 0; i < 5; ++i) CHECK(p.layers[i].name[4] == static_cast<char>('1' + i));
  CHECK(p.layers[0].cost.boundary_bytes == 1);
  CHECK(p.layers[1].cost.boundary_bytes == 11);
  CHECK(p.layers[2].cost.boundary_bytes == 111);
  CHECK(p.layers[3].cost.boundary_bytes == 1101);
  CHECK(p.layers[4].cost.boundary_bytes == 0);
  CHECK(p.microbatch == 4);
}

TEST_CASE("the topological order does not follow the line order when lines are shuffled") {
  const Profile p = parse(
      "node3 -- c -- forward_compute_time=0, backward_compute_time=0, activation_size=1, parameter_size=0\n"
      "node1 -- a -- forward_compute_time=0, backward_compute_time=0, activation_size=1, parameter_size=0\n"
      "node2 -- b -- forward_compute_time=0, backward_compute_time=0, activation_size=1, parameter_size=0\n"
      "\tnode2 -- node1\n\tnode1 -- node3\n");
  CHECK(p.layers[0].name == "node2 b");
  CHECK(p.layers[1].name == "node1 a");
  CHECK(p.layers[2].name == "node3 c");
}

TEST_CASE("malformed graph files name the file and the line") {
  const std::string good =
      "node1 -- a -- forward_compute_time=1, backward_compute_time=1, activation_size=1, parameter_size=0\n";
  CHECK_THROWS_WITH(parse(good + "node2 -- b -- forward_compute_time=x, backward_compute_time=1, "
                                 "activation_size=1, parameter_size=0\n",
                          "bad.txt"),
                    Catch::StartsWith("bad.txt:2:") && Catch::Contains("forward_compute_time=x"));
  CHECK_THROWS_WITH(parse(good + "node2 -- b -- forward_compute_time=1, activation_size=1, parameter_size=0\n",
                          "bad.txt"),
                    Catch::StartsWith("bad.txt:2:") && Catch::Contains("backward_compute_time"));
  CHECK_THROWS_WITH(parse(good + "\tnode1 -- node9\n", "bad.txt"),
                    Catch::StartsWith("bad.txt:2:") && Catch::Contains("unknown node node9"));
  CHECK_THROWS_WITH(parse(good + "garbage\n", "bad.txt"), Catch::StartsWith("bad.txt:2:"));
  CHECK_THROWS_WITH(parse(good + good, "bad.txt"), Catch::StartsWith("bad.txt:2:") && Catch::Contains("twice"));
  CHECK_THROWS_WITH(parse(good + "node2 -- b -- forward_compute_time=1, backward_compute_time=1, "
                                 "activation_size=[1; 2, parameter_size=0\n",
                          "bad.txt"),
                    Catch::StartsWith("bad.txt:2:"));
  CHECK_THROWS_WITH(parse(good +
                              "node2 -- b -- forward_compute_time=1, backward_compute_time=1, "
                              "activation_size=1, parameter_size=0\n\tnode1 -- node2\n\tnode2 -- node1\n",
                          "bad.txt"),
                    Catch::StartsWith("bad.txt:") && Catch::Contains("cycle"));
  CHECK_THROWS_WITH(parse("", "empty.txt"), Catch::StartsWith("empty.txt") && Catch::Contains("no node lines"));
  CHECK_THROWS_WITH(read_graph_profile("/nonexistent/graph.txt"), Catch::Contains("/nonexistent/graph.txt"));
}

TEST_CASE("every published profile loads, in both directories") {
  const std::string dir = loom::planner::test::profiles_dir();
  INFO("the published profiles are part of the repository: " << dir);
  REQUIRE(std::filesystem::is_directory(std::filesystem::path(dir) / "dapple"));
  REQUIRE(std::filesystem::is_directory(std::filesystem::path(dir) / "pipedream"));
  int loaded = 0;
  for (const char* sub : {"dapple", "pipedream"}) {
    for (const auto& entry : std::filesystem::directory_iterator(std::filesystem::path(dir) / sub)) {
      const std::string name = entry.path().filename().string();
      if (entry.path().extension() != ".txt" || name == "LICENSE.txt") continue;
      INFO(entry.path().string());
      const Profile p = load_profile(entry.path().string());
      CHECK(p.size() > 5);
      CHECK(p.total_parameter_bytes() > 0);
      CHECK(p.layers.back().cost.boundary_bytes == 0);
      for (int l = 0; l + 1 < p.size(); ++l) CHECK(p.layers[l].cost.boundary_bytes >= 0);
      ++loaded;
    }
  }
  CHECK(loaded == 19);
  const Profile bert = load_profile(dir + "/dapple/bert-48-pbs-2.txt");
  CHECK(bert.size() == 53);
  CHECK(bert.microbatch == 2);
  CHECK(bert.model == "bert-48");
  // layer_0 (node5): its output and the attention mask (node2, used by every layer) cross the cut.
  CHECK(bert.layers[4].name == "node5 layer_0");
  CHECK(bert.layers[4].cost.boundary_bytes == 4325376.0 + 3538944.0);
}
