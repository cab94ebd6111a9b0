// Datasets for training apps: a dataset is indexed by global sample number, so any rank can read
// exactly the rows it owns (its replica's share of each micro-batch) without reading the rest.
//   fashion-mnist  real images (IDX files, Debian's dataset-fashion-mnist), 10 classes
//   text:PATH      byte-level language modelling over any file (inputs and next-byte targets)
//   synthetic      deterministic from the seed, shaped for the model
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <loom/core/tensor.h>

namespace loom {

enum class DatasetSplit { train, test };

// What a token model learns from a token stream (text:PATH or synthetic tokens):
//   next         inputs x[0..T), targets x[1..T] (causal language modelling: gpt)
//   masked       BERT's masked LM: 15% of positions are chosen (from the seed and the sample
//                index); of those 80% become the mask token (vocabulary - 1), 10% a random
//                token, 10% stay; targets are the original tokens there and -100 elsewhere
//   permutation  XLNet's permutation LM: inputs x[0..T), targets the same tokens (the model
//                draws each sample's factorisation order from the seed and the sample index)
//   translate    a learnable translation task for encoder-decoder models: inputs [2T] are the
//                source x[0..T) then the decoder input (a start token, vocabulary - 1, then the
//                first T - 1 target tokens); targets [T] are the source reversed with each token
//                mapped through a fixed permutation of the vocabulary
enum class TokenTask : unsigned char { next, masked, permutation, translate };

// What a model expects from its data (set by the model builder).
struct DataShape {
  Shape sample_shape;               // one input sample, e.g. [1, 28, 28] or [T]
  DType input_dtype = DType::f32;   // f32 images/features or i64 tokens
  Shape target_shape;               // one target: [] for a class label, [T] for tokens
  std::int64_t classes = 10;        // classes or vocabulary size
  TokenTask task = TokenTask::next; // token models only
};

class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual std::string name() const = 0;
  virtual std::int64_t size() const = 0;
  virtual DataShape shape() const = 0;
  // Inputs [n, sample...] and i64 targets [n, target...] for the given sample indices (checked).
  void read(std::span<const std::int64_t> indices, Tensor& inputs, Tensor& targets) const;

 protected:
  // Fills row r of the allocated `inputs` and `targets` with sample indices[r].
  virtual void fill(std::span<const std::int64_t> indices, Tensor& inputs, Tensor& targets) const = 0;
};

// Opens `spec` ("fashion-mnist", "text:PATH", "synthetic") for a model expecting `expected`.
// Errors (unknown name, unreadable or malformed files, shapes the model cannot take) name the
// file and the problem.
std::unique_ptr<Dataset> open_dataset(const std::string& spec, DatasetSplit split, const DataShape& expected,
                                      std::uint64_t seed);

// Directory of the Fashion-MNIST IDX files (LOOM_FASHION_MNIST_DIR or Debian's location).
std::string fashion_mnist_dir();

// The samples of one epoch in a seeded random order (the same on every rank).
std::vector<std::int64_t> epoch_order(std::int64_t size, std::uint64_t seed, std::int64_t epoch);

}  // namespace loom
