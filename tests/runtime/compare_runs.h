// One way to compare a run with its reference, for every runtime test that does: per-step losses
// and final weights by parameter name, each check counted so that none can pass having compared
// nothing (a rank holds only its stage's weights, so the ranks together must cover the reference).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <mpi.h>

#include "train_run.h"

namespace loom::test {

// ||a - b|| / max(||b||, tiny): the norm-wise relative error.
inline double norm_relative_error(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return INFINITY;
  double diff = 0, norm = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    diff += (a[i] - b[i]) * (a[i] - b[i]);
    norm += b[i] * b[i];
  }
  return std::sqrt(diff) / std::max(std::sqrt(norm), 1e-30);
}

// Every step's loss within a relative `tolerance` of the reference's (0: bit for bit), as many
// steps as it has, and at least one.
inline void check_losses(const std::vector<double>& losses, const std::vector<double>& reference, double tolerance) {
  REQUIRE(!reference.empty());
  REQUIRE(losses.size() == reference.size());
  for (std::size_t k = 0; k < reference.size(); ++k) {
    INFO("step " << k + 1 << ": " << losses[k] << " against the reference's " << reference[k]);
    if (tolerance == 0)
      CHECK(losses[k] == reference[k]);
    else
      CHECK(std::abs(losses[k] - reference[k]) <= tolerance * std::abs(reference[k]));
  }
}

// Every parameter this rank trained (at least one) within a norm-wise relative `tolerance` of the
// reference's (0: bit for bit), and the ranks together compared every parameter of the reference.
// Collective: every rank of MPI_COMM_WORLD calls it.
inline void check_final_weights(const Weights& trained, const Weights& reference, double tolerance) {
  CHECK(!trained.empty());
  std::vector<int> compared(reference.size(), 0);
  for (const auto& [name, values] : trained) {
    INFO("parameter " << name);
    const auto it = reference.find(name);
    REQUIRE(it != reference.end());
    compared[static_cast<std::size_t>(std::distance(reference.begin(), it))] = 1;
    if (tolerance == 0)
      CHECK(values == it->second);
    else
      CHECK(norm_relative_error(values, it->second) <= tolerance);
  }
  MPI_Allreduce(MPI_IN_PLACE, compared.data(), static_cast<int>(compared.size()), MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  std::size_t index = 0;
  for (const auto& entry : reference) {
    INFO("parameter " << entry.first << " of the reference");
    CHECK(compared[index++] == 1);  // trained on some rank
  }
}

// Every rank's weights on every rank (a parameter held by several ranks, replicas or a tie's two
// stages, once): a reference trained at one layout compared with a run at another.
inline Weights gather_weights(const Weights& mine) {
  std::vector<char> bytes;
  const auto append = [&](const void* data, std::size_t size) {
    bytes.insert(bytes.end(), static_cast<const char*>(data), static_cast<const char*>(data) + size);
  };
  for (const auto& [name, values] : mine) {
    const std::size_t sizes[2] = {name.size(), values.size()};
    append(sizes, sizeof sizes);
    append(name.data(), name.size());
    append(values.data(), values.size() * sizeof(double));
  }
  int ranks = 0, length = static_cast<int>(bytes.size());
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  std::vector<int> lengths(static_cast<std::size_t>(ranks)), offsets(static_cast<std::size_t>(ranks), 0);
  MPI_Allgather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, MPI_COMM_WORLD);
  for (int r = 1; r < ranks; ++r) offsets[r] = offsets[r - 1] + lengths[r - 1];
  std::vector<char> all(static_cast<std::size_t>(offsets.back() + lengths.back()));
  MPI_Allgatherv(bytes.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR, MPI_COMM_WORLD);
  Weights weights;
  for (std::size_t at = 0; at < all.size();) {
    std::size_t sizes[2];
    std::memcpy(sizes, all.data() + at, sizeof sizes);
    at += sizeof sizes;
    const std::string name(all.data() + at, sizes[0]);
    at += sizes[0];
    std::vector<double> values(sizes[1]);
    std::memcpy(values.data(), all.data() + at, sizes[1] * sizeof(double));
    at += sizes[1] * sizeof(double);
    weights.emplace(name, std::move(values));
  }
  return weights;
}

}  // namespace loom::test
