// Dropout: in training, y = x * mask / (1 - p) with mask ~ Bernoulli(1 - p); identity in eval.
// The mask is drawn from the counter-based RNG keyed by (seed, step, this layer's full name and
// block index) at element (global sample index) * (elements per sample) + offset, where the global
// sample index is ctx.first_sample + row. So a sample gets the same mask however the batch is
// split into micro-batches and replicas. Nothing is saved: backward regenerates the mask.
#pragma once

#include <loom/layers/layer.h>

namespace loom {

class Dropout : public UnaryLayer {
 public:
  explicit Dropout(double p = 0.5);
  double p() const { return p_; }

  std::string type() const override { return "Dropout"; }
  std::vector<Shape> output_shapes(const std::vector<Shape>& input_shapes) const override { return input_shapes; }
  double flops(const std::vector<Shape>& input_shapes) const override;
  std::size_t activation_bytes(const std::vector<Shape>& /*input_shapes*/) const override { return 0; }

  Tensor forward_tensor(const Tensor& x, Context& ctx) override;
  Tensor backward_input_tensor(const Tensor& grad_y, Context& ctx) override;

 private:
  // x * mask / (1 - p) for the mask of this context; used by forward and backward alike.
  Tensor apply_mask(const Tensor& x, const Context& ctx) const;
  double p_;
};

// out = x * keep / (1 - p) in one pass (out may be x), for rows of a micro-batch starting at
// global sample first_sample: element i of the micro-batch is kept when element
// first_sample * (elements per sample) + i of the Bernoulli(1 - p) stream (seed, key) is 1 —
// exactly the mask rng::bernoulli draws. Shared by Dropout and attention-probability dropout.
void dropout_apply(const Tensor& x, Tensor& out, double p, std::uint64_t seed, std::uint64_t key,
                   std::int64_t first_sample);

}  // namespace loom
