// Where every rank computes (see device_placement.h).
#include <loom/comm/device_placement.h>

#include <mpi.h>

#include <loom/comm/mpi_session.h>
#include <loom/comm/watchdog.h>
#include <loom/base/error.h>

namespace loom::comm {

DevicePlacement::DevicePlacement(std::vector<int> node, std::vector<Device> device)
    : node_(std::move(node)), device_(std::move(device)) {
  LOOM_CHECK(node_.size() == device_.size(), "device placement: ", node_.size(), " nodes for ", device_.size(),
             " devices");
}

DevicePlacement DevicePlacement::gather(const Topology& machine, Device mine) {
  const int size = comm::world_size();
  const int entry[2] = {static_cast<int>(mine.kind), mine.index};
  std::vector<int> table(2 * static_cast<std::size_t>(size));
  {
    WatchdogScope watch("MPI_Allgather (device placement)");
    LOOM_MPI_CHECK(MPI_Allgather(entry, 2, MPI_INT, table.data(), 2, MPI_INT, MPI_COMM_WORLD));
  }
  std::vector<int> node;
  std::vector<Device> device;
  for (int r = 0; r < size; ++r) {
    node.push_back(machine.node_of(r));
    device.push_back({static_cast<DeviceKind>(table[2 * static_cast<std::size_t>(r)]), table[2 * static_cast<std::size_t>(r) + 1]});
  }
  return {std::move(node), std::move(device)};
}

int DevicePlacement::sharing(int rank) const {
  int count = 0;
  for (int r = 0; r < world_size(); ++r)
    if (node_of(r) == node_of(rank) && device_of(r) == device_of(rank)) ++count;
  return count;
}

std::string DevicePlacement::direct_obstacle(const std::vector<int>& ranks) const {
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    const Device device = device_of(ranks[i]);
    if (device.is_cpu()) return loom::detail::concat("the ranks compute on ", device.str(), ", not on a device");
    for (std::size_t j = 0; j < i; ++j)
      if (node_of(ranks[j]) == node_of(ranks[i]) && device_of(ranks[j]) == device)
        return loom::detail::concat("ranks ", ranks[j], " and ", ranks[i], " share ", device.str(), " of node ",
                              node_of(ranks[i]));
  }
  return "";
}

}  // namespace loom::comm
