// Where every rank of the job computes: its physical node and the device it uses there, the same
// table on every rank. Two things are decided from it, identically on every rank:
//   - how many processes draw on one rank's memory (the up-front memory check divides a device's
//     free bytes among them): the ranks of its node on the same device;
//   - whether a group of ranks can move device memory directly: NCCL puts at most one rank of a
//     communicator on a GPU, so a group in which two ranks share a GPU reduces its gradients and
//     crosses its stage boundaries host-staged over MPI instead (the sim device follows the same
//     rule, so CPU tests take both paths).
#pragma once

#include <string>
#include <vector>

#include <loom/comm/topology.h>
#include <loom/core/device.h>

namespace loom::comm {

class DevicePlacement {
 public:
  // `node` and `device` per world rank (the same length); every device of one kind.
  DevicePlacement(std::vector<int> node, std::vector<Device> device);
  // Collective over MPI_COMM_WORLD: every rank's device, on the nodes of `machine` (the physical ones).
  static DevicePlacement gather(const Topology& machine, Device mine);

  int world_size() const { return static_cast<int>(node_.size()); }
  Device device_of(int rank) const { return device_.at(static_cast<std::size_t>(rank)); }
  int node_of(int rank) const { return node_.at(static_cast<std::size_t>(rank)); }
  // The ranks on `rank`'s node that use its device, itself included.
  int sharing(int rank) const;
  // Empty when every rank of `ranks` has a device of its own (a GPU, or a sim device), else why
  // they cannot move device memory to each other directly: "ranks 0 and 1 share cuda:0 of node 0"
  // (or "the ranks compute on cpu, not on a device").
  std::string direct_obstacle(const std::vector<int>& ranks) const;

 private:
  std::vector<int> node_;
  std::vector<Device> device_;
};

}  // namespace loom::comm
