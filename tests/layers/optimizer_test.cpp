// Optimizers against torch.optim on the same parameters and gradients, learning-rate schedules
// against their formulas, and clipping's sum of squares against a direct sum.
#include <catch2/catch.hpp>

#include <cmath>

#include <loom/core/ops.h>
#include <loom/core/threads.h>
#include <loom/layers/linear.h>
#include <loom/layers/optimizer.h>

#include "torch_reference.h"

using namespace loom;

namespace {

struct Case {
  std::string kind;
  double lr, momentum, weight_decay;
  bool nesterov;
  double clip = 0;  // max gradient norm (0: no clipping)
};

void check_against_torch(const Case& c) {
  const int steps = 5;
  Linear layer(3, 4);
  layer.initialize(11, 0);
  auto params = trainable_parameters(layer);
  safetensors::NamedTensors inputs;
  nlohmann::json names = nlohmann::json::array();
  for (const NamedParameter& p : params) {
    inputs.emplace_back(p.name, p.parameter->value.clone());
    names.push_back(p.name);
  }
  std::unique_ptr<Optimizer> optimizer;
  if (c.kind == "sgd")
    optimizer = std::make_unique<Sgd>(params, SgdOptions{c.momentum, 0.0, c.nesterov, c.weight_decay});
  else
    optimizer = std::make_unique<Adam>(params, AdamOptions{0.9, 0.999, 1e-8, c.weight_decay, c.kind == "adamw"});
  for (int step = 0; step < steps; ++step) {
    for (std::size_t i = 0; i < params.size(); ++i) {
      Tensor g = test::random_tensor(params[i].parameter->value.shape(), 100 + 10 * step + i);
      params[i].parameter->grad.copy_from(g);
      inputs.emplace_back(params[i].name + ".grad" + std::to_string(step), g);
    }
    optimizer->step(c.lr, c.clip > 0 ? clip_scale(optimizer->grad_sum_of_squares(), c.clip) : 1.0);
  }
  CHECK(optimizer->steps() == steps);
  const auto reference = test::run_torch("optim", inputs,
                                         {{"kind", c.kind}, {"lr", c.lr}, {"momentum", c.momentum},
                                          {"nesterov", c.nesterov}, {"weight_decay", c.weight_decay},
                                          {"steps", steps}, {"params", names}, {"clip", c.clip}});
  for (const NamedParameter& p : params) {
    INFO(c.kind << " momentum " << c.momentum << " nesterov " << c.nesterov << " wd " << c.weight_decay << " "
                << p.name);
    CHECK(test::relative_error(p.parameter->value, reference.get(p.name)) <= 1e-5);
  }
}

}  // namespace

TEST_CASE("SGD, Adam and AdamW (with and without clipping) equal torch.optim over several steps",
          "[optimizer][torch]") {
  for (const Case& c : {Case{"sgd", 0.1, 0.0, 0.0, false}, Case{"sgd", 0.1, 0.9, 0.01, false},
                        Case{"sgd", 0.05, 0.9, 0.0, true}, Case{"adam", 0.01, 0, 0.0, false},
                        Case{"adam", 0.01, 0, 0.1, false}, Case{"adamw", 0.01, 0, 0.1, false},
                        Case{"sgd", 0.1, 0.9, 0.0, false, 0.5}, Case{"adam", 0.01, 0, 0.0, false, 0.5}})
    check_against_torch(c);
}

namespace {

// Parameters of sizes that straddle the optimizer's chunks (32 Ki elements): large ones split across
// threads, small ones sharing a chunk with their neighbours.
std::vector<Parameter> odd_parameters() {
  std::vector<Parameter> params;
  std::uint64_t key = 300;
  for (std::int64_t n : {5, 70001, 3, 40000, 1, 32768, 9}) {
    params.push_back(make_parameter("weight", {n}, Init::zeros()));
    params.back().value.copy_from(test::random_tensor({n}, key++));
    params.back().grad.copy_from(test::random_tensor({n}, key++));
  }
  return params;
}

// Three steps of `kind` over odd_parameters() on `threads` threads; the values afterwards.
std::vector<std::vector<float>> three_steps(const std::string& kind, int threads) {
  set_num_threads(threads);
  std::vector<Parameter> params = odd_parameters();
  std::vector<NamedParameter> named;
  for (Parameter& p : params) named.push_back({p.name, &p});
  std::unique_ptr<Optimizer> optimizer;
  if (kind == "momentum") optimizer = std::make_unique<Sgd>(named, SgdOptions{.momentum = 0.9, .nesterov = true});
  else optimizer = std::make_unique<Adam>(named, AdamOptions{.weight_decay = 0.1, .decoupled_weight_decay = true});
  for (int step = 0; step < 3; ++step) optimizer->step(0.01, 0.5);
  set_num_threads(1);
  std::vector<std::vector<float>> values;
  for (const Parameter& p : params) values.push_back(p.value.to_float_vector());
  return values;
}

}  // namespace

TEST_CASE("a multi-threaded step updates every element of every parameter once", "[optimizer]") {
  // One thread runs the whole flat range as one piece; three cut it into chunks across parameter
  // boundaries. Element-wise updates do not depend on the cut, so the values must be identical.
  for (const std::string kind : {"momentum", "adamw"}) {
    INFO(kind);
    const auto one = three_steps(kind, 1), three = three_steps(kind, 3);
    REQUIRE(one.size() == three.size());
    for (std::size_t i = 0; i < one.size(); ++i) CHECK(one[i] == three[i]);
  }
  // And against the formula for SGD with Nesterov momentum, element by element in double.
  std::vector<Parameter> start = odd_parameters();
  const auto stepped = three_steps("momentum", 3);
  double worst = 0;
  for (std::size_t i = 0; i < start.size(); ++i) {
    const auto w0 = start[i].value.to_float_vector(), g = start[i].grad.to_float_vector();
    for (std::size_t j = 0; j < w0.size(); ++j) {
      double w = w0[j], buffer = 0;
      for (int step = 0; step < 3; ++step) {
        const double d = 0.5 * g[j];
        buffer = step == 0 ? d : 0.9 * buffer + d;
        w -= 0.01 * (d + 0.9 * buffer);
      }
      worst = std::max(worst, std::abs(w - stepped[i][j]));
    }
  }
  CHECK(worst < 1e-6);
}

TEST_CASE("grad_scale multiplies the gradient", "[optimizer]") {
  Linear a(2, 2, false), b(2, 2, false);
  a.initialize(1, 0);
  b.initialize(1, 0);
  Sgd sa(trainable_parameters(a)), sb(trainable_parameters(b));
  Tensor g = test::random_tensor({2, 2}, 5);
  a.weight().grad.copy_from(g);
  Tensor half = g.clone();
  ops::scale(half, 0.5);
  b.weight().grad.copy_from(half);
  sa.step(0.1, 0.5);
  sb.step(0.1);
  CHECK(ops::max_abs_error(a.weight().value, b.weight().value) == 0);
  double squares = 0;
  for (float v : g.to_float_vector()) squares += double(v) * v;
  CHECK(sa.grad_sum_of_squares() == Approx(squares).epsilon(1e-12));
  sa.zero_grad();
  CHECK(sa.grad_sum_of_squares() == 0);
}

TEST_CASE("learning-rate schedules follow their formulas", "[optimizer]") {
  LrSchedule s;
  s.base_lr = 1.0;
  s.warmup_steps = 4;
  s.total_steps = 14;
  s.kind = LrSchedule::Kind::linear;
  CHECK(s.at(0) == Approx(0.25));
  CHECK(s.at(3) == Approx(1.0));
  CHECK(s.at(9) == Approx(0.5));
  CHECK(s.at(14) == Approx(0.0));
  CHECK(s.at(100) == Approx(0.0));
  s.kind = LrSchedule::Kind::cosine;
  CHECK(s.at(9) == Approx(0.5));
  CHECK(s.at(4) == Approx(1.0));
  CHECK(s.at(6) == Approx(0.5 * (1 + std::cos(3.14159265358979 * 0.2))));
  // A schedule started at step 10 (a resume that chose it): the same path, 10 steps later.
  LrSchedule late = s;
  late.first_step = 10;
  late.total_steps = 24;
  for (const std::int64_t step : {0, 3, 6, 9, 14})
    CHECK(late.at(step + 10) == Approx(s.at(step)).margin(1e-15));
  s.kind = LrSchedule::Kind::constant;
  CHECK(s.at(50) == 1.0);
  CHECK(LrSchedule::parse("cosine") == LrSchedule::Kind::cosine);
  CHECK_THROWS_WITH(LrSchedule::parse("step"), Catch::Contains("unknown learning-rate schedule 'step'"));
}

TEST_CASE("optimizer options are checked", "[optimizer][errors]") {
  Linear a(2, 2);
  CHECK_THROWS_WITH(Sgd(trainable_parameters(a), SgdOptions{0.0, 0.0, true, 0.0}), Catch::Contains("Nesterov"));
  CHECK_THROWS_WITH(Adam(trainable_parameters(a), AdamOptions{1.5, 0.999, 1e-8, 0, false}), Catch::Contains("betas"));
}
