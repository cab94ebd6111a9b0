// The XLNet presets: the paper-size parameter counts block by block against DAPPLE's profiles
// (data/profiles/dapple/xlnet-{36,24}-pbs-1.txt; the numbers are copied here), a tiny model
// whose loss falls when trained, and the partition independence of its outputs (dropout masks
// and factorisation orders): a block built alone, or a micro-batch of rows, gives what the whole
// chain gives for the whole batch.
#include <catch2/catch.hpp>

#include <cmath>

#include <loom/core/ops.h>
#include <loom/layers/optimizer.h>
#include <loom/models/model.h>

using namespace loom;

namespace {

// The profile's parameter_size per node, in bytes as written, and its totals in f32 values.
constexpr double kProfileEmbedBytes = 131e6, kProfileLayerBytes = 52e6;
constexpr double kMiB = 1024.0 * 1024.0;

void check_against_profile(const std::string& name, std::int64_t layers, double profile_total) {
  INFO(name);
  const ModelSpec spec = make_model(name);
  REQUIRE(spec.blocks() == layers + 2);
  const ModelSummary summary = summarize(spec);
  const std::int64_t V = 32000, E = 1024, F = 4096;
  const std::int64_t embedding = V * E + E;                                    // word + mask embedding
  const std::int64_t layer = 5 * E * E + 2 * E + (2 * E * F + F + E) + 4 * E;  // q k v o r, u w, FFN, 2 LN
  const std::int64_t head = V * E + V;  // LM head; its weight tied to the word embedding (counted once)
  CHECK(layer == 13642752);
  CHECK(summary.block_parameters.front() == embedding);
  for (std::int64_t i = 1; i <= layers; ++i) CHECK(summary.block_parameters[static_cast<std::size_t>(i)] == layer);
  CHECK(summary.block_parameters.back() == head);
  CHECK(summary.tied_copies == V * E);
  CHECK(summary.parameters == embedding + layers * layer + V);
  CHECK(summarize(make_model(name, "tie_embeddings=0")).parameters == embedding + layers * layer + head);
  // The profile's rounding: Embed-Token in decimal MB, each layer in MiB, both rounded down and
  // written as 10^6 bytes; the loss holds no parameters (XLNet ties the head to Embed-Token).
  CHECK(std::floor(4.0 * static_cast<double>(embedding) / 1e6) * 1e6 == kProfileEmbedBytes);
  CHECK(std::floor(4.0 * static_cast<double>(layer) / kMiB) * 1e6 == kProfileLayerBytes);
  CHECK((kProfileEmbedBytes + static_cast<double>(layers) * kProfileLayerBytes) / 4.0 == profile_total);
  // So the difference to the profile is the head's bias plus what its rounding dropped (4.6% at 36 layers).
  const double dropped = static_cast<double>(embedding) - kProfileEmbedBytes / 4.0 +
                         static_cast<double>(layers) * (static_cast<double>(layer) - kProfileLayerBytes / 4.0);
  CHECK(static_cast<double>(summary.parameters) == profile_total + static_cast<double>(V) + dropped);
  CHECK(std::abs(static_cast<double>(summary.parameters) - profile_total) <= 0.05 * profile_total);
  // seq 512 as the profile's activations: a layer's output stream is 2 MiB per sample.
  CHECK(summary.blocks[1].output_shapes[0] == (Shape{1, 512, 1024}));
}

// Rows of a learnable permutation-LM batch: arithmetic sequences of tokens.
Tensor tokens(std::int64_t rows, std::int64_t length, std::int64_t vocab) {
  std::vector<std::int64_t> values;
  for (std::int64_t b = 0; b < rows; ++b)
    for (std::int64_t t = 0; t < length; ++t) values.push_back((3 * b + (b % 3 + 1) * t) % vocab);
  return Tensor::from_vector(values, Shape{rows, length});
}

Context context(std::int64_t first_sample) {
  Context ctx;
  ctx.seed = 9;
  ctx.step = 4;
  ctx.first_sample = first_sample;
  return ctx;
}

}  // namespace

TEST_CASE("xlnet36 and xlnet24 at paper size: parameters against the DAPPLE profiles") {
  check_against_profile("xlnet36", 36, 500.75e6);
  check_against_profile("xlnet24", 24, 344.75e6);
  const ModelSpec spec = make_model("xlnet36");
  CHECK(spec.data.task == TokenTask::permutation);
  CHECK(spec.data.input_dtype == DType::i64);
  CHECK(spec.targets_per_sample == 512);
}

TEST_CASE("tiny xlnet36 learns: the permutation-LM loss falls") {
  const ModelSpec spec = make_model("xlnet36", "", ModelSize::tiny);
  auto chain = spec.build_all();
  chain->initialize(3);
  auto loss = spec.make_loss();
  Adam optimizer(chain->parameters(), {});
  const std::int64_t seq = spec.data.sample_shape[0], vocab = spec.data.classes;
  const Tensor x = tokens(8, seq, vocab);
  std::vector<double> losses;
  for (std::int64_t step = 0; step < 200; ++step) {
    Context ctx = context(0), loss_ctx = context(0);
    ctx.step = loss_ctx.step = static_cast<std::uint64_t>(step);
    const Tensor logits = chain->forward({x}, ctx).at(0);
    const Tensor value = loss->forward({logits, x}, loss_ctx).at(0);
    losses.push_back(value.to_double_vector().at(0));
    optimizer.zero_grad();
    chain->backward({loss->backward({Tensor::full(Shape{}, 1.0)}, loss_ctx)[0]}, ctx);
    optimizer.step(0.01);
  }
  const double first = (losses[0] + losses[1] + losses[2]) / 3.0;
  const double last = (losses[197] + losses[198] + losses[199]) / 3.0;
  INFO("loss " << first << " -> " << last);
  CHECK(first == Approx(std::log(static_cast<double>(vocab))).epsilon(0.1));
  CHECK(last < 0.6 * first);
}

TEST_CASE("tiny xlnet: blocks built alone and micro-batches of rows give the whole chain's outputs") {
  const ModelSpec spec = make_model("xlnet24", "", ModelSize::tiny);
  auto whole = spec.build_all();
  whole->initialize(5);
  const Tensor x = tokens(4, spec.data.sample_shape[0], spec.data.classes);
  Context whole_ctx = context(10);
  const Tensor expected = whole->forward({x}, whole_ctx).at(0);

  TensorList boundary{x};
  for (std::int64_t i = 0; i < spec.blocks(); ++i) {
    auto alone = spec.build(i, i + 1);
    alone->initialize(5);
    Context ctx = context(10);
    boundary = alone->forward(boundary, ctx);
  }
  CHECK(ops::max_abs_error(boundary.at(0), expected) == 0.0);

  for (const auto& [begin, end] : {std::pair<std::int64_t, std::int64_t>{0, 1}, {1, 4}}) {
    Context ctx = context(10 + begin);
    const Tensor rows = whole->forward({x.slice(begin, end)}, ctx).at(0);
    CHECK(ops::max_abs_error(rows, expected.slice(begin, end)) < 1e-5);
  }
  Context other = context(11);
  CHECK(ops::max_abs_error(whole->forward({x}, other).at(0), expected) > 1e-3);
}
