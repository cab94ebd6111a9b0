#include <catch2/catch.hpp>

#include <loom/base/error.h>
#include <loom/planner/cluster.h>

#include "test_files.h"

using namespace loom::planner;
using loom::planner::test::write_temp;

TEST_CASE("units: bytes and bits, decimal and binary prefixes") {
  CHECK(parse_bandwidth("130GB/s") == Approx(130e9));
  CHECK(parse_bandwidth("25Gb/s") == Approx(25e9 / 8));
  CHECK(parse_bandwidth("10Gbps") == Approx(10e9 / 8));
  CHECK(parse_bandwidth("1GiB/s") == Approx(1073741824.0));
  CHECK(parse_bytes("16GB") == Approx(16e9));
  CHECK(parse_bytes("16GiB") == Approx(16.0 * 1073741824.0));
  CHECK(parse_bytes("512") == 512);
  CHECK(parse_latency_ms("5us") == Approx(0.005));
  CHECK(parse_latency_ms("0") == 0);
  CHECK_THROWS_WITH(parse_bytes("16Gb"), Catch::Contains("bytes"));
  CHECK_THROWS_WITH(parse_bandwidth("fast"), Catch::Contains("'fast'"));
  CHECK_THROWS_WITH(parse_bandwidth("3XB/s"), Catch::Contains("unknown unit"));
}

TEST_CASE("presets A, B, C are the DAPPLE paper's clusters") {
  const Cluster a = parse_cluster("A");
  CHECK(a.nodes == 2);
  CHECK(a.devices_per_node == 8);
  CHECK(a.intra_bandwidth == Approx(130e9));
  CHECK(a.inter_bandwidth == Approx(25e9 / 8));
  CHECK(a.device_memory == Approx(16e9));
  const Cluster b = parse_cluster("B"), c = parse_cluster("C");
  CHECK(b.devices() == 16);
  CHECK(b.devices_per_node == 1);
  CHECK(b.inter_bandwidth == Approx(25e9 / 8));
  CHECK(c.inter_bandwidth == Approx(10e9 / 8));
  CHECK(parse_cluster("A:mem=32GB").device_memory == Approx(32e9));
}

TEST_CASE("the short spec sets every field") {
  const Cluster c = parse_cluster("4x2:intra=100GB/s,inter=100Gb/s,mem=40GiB,intra_lat=2us,inter_lat=10us");
  CHECK(c.nodes == 4);
  CHECK(c.devices_per_node == 2);
  CHECK(c.devices() == 8);
  CHECK(c.node_of(5) == 2);
  CHECK(c.intra_bandwidth == Approx(100e9));
  CHECK(c.inter_bandwidth == Approx(12.5e9));
  CHECK(c.device_memory == Approx(40.0 * 1073741824.0));
  CHECK(c.intra_latency_ms == Approx(0.002));
  CHECK(c.inter_latency_ms == Approx(0.010));
}

TEST_CASE("bad cluster specs say what is wrong") {
  CHECK_THROWS_WITH(parse_cluster("2x"), Catch::Contains("cluster spec '2x'") && Catch::Contains("NODESxDEVICES"));
  CHECK_THROWS_WITH(parse_cluster("0x8"), Catch::Contains("NODESxDEVICES"));
  CHECK_THROWS_WITH(parse_cluster("2x8:speed=1GB/s"), Catch::Contains("unknown key 'speed'"));
  CHECK_THROWS_WITH(parse_cluster("2x8:inter"), Catch::Contains("key=value"));
  CHECK_THROWS_WITH(parse_cluster("2x8:mem=lots"), Catch::Contains("'lots'"));
  CHECK_THROWS_WITH(parse_cluster("D"), Catch::Contains("NODESxDEVICES"));
}

TEST_CASE("cluster JSON files: values with units or in base units; errors name the file and line or field") {
  const Cluster c = parse_cluster(write_temp("c.json", R"({"nodes": 2, "devices_per_node": 4,
      "intra_bandwidth": "50GB/s", "inter_bandwidth": 1.25e9, "device_memory": "32GB"})"));
  CHECK(c.devices() == 8);
  CHECK(c.intra_bandwidth == Approx(50e9));
  CHECK(c.inter_bandwidth == Approx(1.25e9));
  CHECK(c.device_memory == Approx(32e9));
  const std::string bad_syntax = write_temp("bad_syntax.json", "{\"nodes\": 2,\n \"devices_per_node\": }\n");
  CHECK_THROWS_WITH(parse_cluster(bad_syntax), Catch::Contains("bad_syntax.json:2:") && Catch::Contains("invalid JSON"));
  const std::string bad_unit = write_temp("bad_unit.json", R"({"nodes": 2, "devices_per_node": 4, "device_memory": "3 apples"})");
  CHECK_THROWS_WITH(parse_cluster(bad_unit), Catch::Contains("bad_unit.json") && Catch::Contains("device_memory"));
  const std::string missing = write_temp("missing.json", R"({"nodes": 2})");
  CHECK_THROWS_WITH(parse_cluster(missing), Catch::Contains("missing.json") && Catch::Contains("devices_per_node"));
  const std::string unknown = write_temp("unknown.json", R"({"nodes": 2, "devices_per_node": 1, "gpus": 3})");
  CHECK_THROWS_WITH(parse_cluster(unknown), Catch::Contains("unknown field gpus"));
}
