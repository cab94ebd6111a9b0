// Control collectives (see control.h).
#include <loom/comm/control.h>

#include <mpi.h>

#include <loom/comm/watchdog.h>
#include <loom/base/error.h>

namespace loom::comm {

std::vector<std::int64_t> max_over(Communicator& group, std::vector<std::int64_t> values) {
  if (group.size() == 1 || values.empty()) return values;
  WatchdogScope watch("MPI_Allreduce (max)");
  LOOM_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, values.data(), static_cast<int>(values.size()), MPI_INT64_T, MPI_MAX,
                               group.mpi_comm()));
  return values;
}

bool any_member(Communicator& group, bool here) {
  int flag = here ? 1 : 0;
  if (group.size() == 1) return here;
  WatchdogScope watch("MPI_Allreduce (failure flag)");
  LOOM_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &flag, 1, MPI_INT, MPI_MAX, group.mpi_comm()));
  return flag != 0;
}

std::optional<std::string> first_failure(Communicator& group, const std::optional<std::string>& failure) {
  const int size = group.size();
  if (size == 1) return failure;
  int first = failure ? group.rank() : size;
  {
    WatchdogScope watch("MPI_Allreduce (first failure)");
    LOOM_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &first, 1, MPI_INT, MPI_MIN, group.mpi_comm()));
  }
  if (first == size) return std::nullopt;
  std::string text = group.rank() == first ? failure->substr(0, 1 << 16) : std::string();
  int length = static_cast<int>(text.size());
  WatchdogScope watch("MPI_Bcast (failure message)", group.world_rank_of(first));
  LOOM_MPI_CHECK(MPI_Bcast(&length, 1, MPI_INT, first, group.mpi_comm()));
  text.resize(static_cast<std::size_t>(length));
  LOOM_MPI_CHECK(MPI_Bcast(text.data(), length, MPI_CHAR, first, group.mpi_comm()));
  return text;
}

std::vector<std::string> gather_text(Communicator& group, const std::string& text, int root) {
  const int size = group.size();
  LOOM_CHECK(text.size() < static_cast<std::size_t>(1) << 31, "gather_text: ", text.size(), " bytes do not fit one message");
  int length = static_cast<int>(text.size());
  std::vector<int> lengths(static_cast<std::size_t>(size)), offsets(static_cast<std::size_t>(size), 0);
  WatchdogScope watch("MPI_Gatherv (control text)", group.world_rank_of(root));
  LOOM_MPI_CHECK(MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, root, group.mpi_comm()));
  std::int64_t total = 0;
  for (int r = 0; r < size; ++r) {
    offsets[r] = static_cast<int>(total);
    total += lengths[r];
  }
  LOOM_CHECK(group.rank() != root || total < static_cast<std::int64_t>(1) << 31, "gather_text: ", total,
             " bytes in all do not fit one message");
  std::string all(group.rank() == root ? static_cast<std::size_t>(total) : 0, '\0');
  LOOM_MPI_CHECK(MPI_Gatherv(text.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR, root,
                             group.mpi_comm()));
  std::vector<std::string> texts;
  if (group.rank() != root) return texts;
  for (int r = 0; r < size; ++r) texts.push_back(all.substr(static_cast<std::size_t>(offsets[r]), lengths[r]));
  return texts;
}

}  // namespace loom::comm
