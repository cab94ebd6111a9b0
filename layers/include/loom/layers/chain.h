// Chain: the model as a list of blocks, the unit that pipeline stages split. A stage holds the
// blocks [first, first + size) of the full chain; block i of a Chain has the global index
// first_block_index() + i, which (with the seed and the parameter's full name) keys its initial
// values, so a block built on any rank, in any partition, gets the same parameters.
// describe() reports what the planner and the memory model need per block.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <loom/layers/sequential.h>

namespace loom {

// One block as the planner sees it, for given input shapes (f32 bytes).
struct BlockInfo {
  std::int64_t index = 0;  // global block index
  std::string name;
  std::string type;
  std::size_t parameter_bytes = 0;
  std::vector<Shape> input_shapes;
  std::vector<Shape> output_shapes;
  double flops = 0.0;               // forward
  std::size_t activation_bytes = 0; // kept by forward until backward
  std::size_t output_bytes = 0;     // what crosses a stage boundary after this block
};

class Chain : public Sequential {
 public:
  // Blocks added get names defaulting to their global index.
  explicit Chain(std::int64_t first_block_index = 0) { first_index_ = first_block_index; }

  std::int64_t first_block_index() const { return first_index_; }
  Layer& block(std::size_t index) const { return at(index); }
  const std::string& block_name(std::size_t index) const { return layer_name(index); }

  // Moves blocks [begin, end) into a new Chain (the blocks keep their global indices and names);
  // this chain is left without them. The range must be a prefix or a suffix (a stage's blocks are
  // taken off the front one stage at a time), so the blocks left keep their indices too.
  Chain extract(std::size_t begin, std::size_t end);

  // Each block is initialised from (seed, its own global index, its full name); `block_index` is
  // ignored: a chain's blocks carry their own indices.
  void initialize(std::uint64_t seed, std::int64_t block_index, const std::string& prefix = "") override;
  void initialize(std::uint64_t seed) { initialize(seed, 0, ""); }

  std::vector<BlockInfo> describe_blocks(const std::vector<Shape>& input_shapes) const;

  std::string type() const override { return "Chain"; }
};

}  // namespace loom
