// LSTM: f64 finite differences for the input, the initial states and every weight (single and
// multi-layer, bidirectional first layer; the split backward agrees with the full one), and
// PyTorch 1.13 torch.nn.LSTM fp32 references for the output sequence, the final states and all
// gradients, with and without initial states and final-state gradients.
#include <catch2/catch.hpp>

#include <cmath>

#include <loom/core/ops.h>
#include <loom/layers/lstm.h>

#include "check_close.h"
#include "gradcheck.h"
#include "torch_reference.h"

using namespace loom;
using test::check_close;

namespace {

struct LstmCase {
  const char* name;
  LstmOptions options;
  bool with_state;
};

std::vector<LstmCase> cases() {
  return {
      {"one layer", {.input_size = 3, .hidden_size = 4}, false},
      {"one layer with states", {.input_size = 3, .hidden_size = 4}, true},
      {"two layers with states", {.input_size = 3, .hidden_size = 4, .num_layers = 2}, true},
      {"bidirectional single layer", {.input_size = 3, .hidden_size = 4, .bidirectional_first = true}, true},
      {"bidirectional first of three",
       {.input_size = 5, .hidden_size = 3, .num_layers = 3, .bidirectional_first = true},
       true},
  };
}

}  // namespace

TEST_CASE("LSTM gradients match finite differences in f64") {
  for (const LstmCase& c : cases()) {
    SECTION(c.name) {
      LSTM lstm(c.options);
      lstm.initialize(2, 1, "rnn");
      lstm.to(DType::f64);
      const std::int64_t N = 2, T = 4, S = lstm.state_slots(), H = c.options.hidden_size;
      TensorList inputs{test::random_tensor({N, T, c.options.input_size}, 1, -1, 1, DType::f64)};
      if (c.with_state) {
        inputs.push_back(test::random_tensor({N, S, H}, 2, -1, 1, DType::f64));
        inputs.push_back(test::random_tensor({N, S, H}, 3, -1, 1, DType::f64));
      }
      test::GradCheckOptions options;
      options.max_elements = 24;
      const test::GradCheckReport report = test::gradcheck(lstm, inputs, options);
      INFO(report.str());
      CHECK(report.ok);
      CHECK(report.skipped_kinks == 0);
    }
  }
}

TEST_CASE("LSTM equals torch.nn.LSTM in fp32") {
  for (const LstmCase& c : cases()) {
    SECTION(c.name) {
      LSTM lstm(c.options);
      lstm.initialize(4, 0, "rnn");
      const std::int64_t N = 3, T = 6, S = lstm.state_slots(), H = c.options.hidden_size;
      TensorList inputs{test::random_tensor({N, T, c.options.input_size}, 11)};
      if (c.with_state) {
        inputs.push_back(test::random_tensor({N, S, H}, 12));
        inputs.push_back(test::random_tensor({N, S, H}, 13));
      }
      Context ctx;
      const TensorList outputs = lstm.forward(inputs, ctx);
      TensorList grads{test::random_tensor(outputs[0].shape(), 14)};
      if (c.with_state) {
        grads.push_back(test::random_tensor({N, S, H}, 15));
        grads.push_back(test::random_tensor({N, S, H}, 16));
      }
      const TensorList grad_inputs = lstm.backward(grads, ctx);

      safetensors::NamedTensors exchange{{"x", inputs[0]}, {"grad_y", grads[0]}};
      if (c.with_state) {
        exchange.insert(exchange.end(), {{"h0", inputs[1]}, {"c0", inputs[2]}, {"grad_h_n", grads[1]},
                                         {"grad_c_n", grads[2]}});
      }
      for (const NamedParameter& p : lstm.parameters()) exchange.emplace_back(p.name, p.parameter->value);
      const nlohmann::json config{{"input_size", c.options.input_size},
                                  {"hidden_size", H},
                                  {"num_layers", c.options.num_layers},
                                  {"bidirectional_first", c.options.bidirectional_first}};
      const safetensors::File torch = test::run_torch("lstm", exchange, config);
      check_close(outputs[0], torch.get("y"), "y");
      check_close(outputs[1], torch.get("h_n"), "h_n");
      check_close(outputs[2], torch.get("c_n"), "c_n");
      check_close(grad_inputs[0], torch.get("grad_x"), "grad_x");
      if (c.with_state) {
        check_close(grad_inputs[1], torch.get("grad_h0"), "grad_h0");
        check_close(grad_inputs[2], torch.get("grad_c0"), "grad_c0");
      }
      for (const NamedParameter& p : lstm.parameters())
        check_close(p.parameter->grad, torch.get("grad_" + p.name), "grad of " + p.name);
    }
  }
}

TEST_CASE("LSTM names parameters as PyTorch and initialises U(-1/sqrt(H), 1/sqrt(H))") {
  LSTM lstm({.input_size = 8, .hidden_size = 16, .num_layers = 2, .bidirectional_first = true});
  lstm.initialize(1, 5, "encoder.rnn");
  std::vector<std::string> names;
  for (const NamedParameter& p : lstm.parameters()) names.push_back(p.name);
  CHECK(names == std::vector<std::string>{"weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0",
                                          "weight_ih_l0_reverse", "weight_hh_l0_reverse", "bias_ih_l0_reverse",
                                          "bias_hh_l0_reverse", "weight_ih_l1", "weight_hh_l1", "bias_ih_l1",
                                          "bias_hh_l1"});
  CHECK(lstm.parameters()[8].parameter->value.shape() == Shape{64, 32});
  CHECK(lstm.state_slots() == 3);
  CHECK(lstm.output_size() == 16);
  for (const NamedParameter& p : lstm.parameters()) {
    const auto values = p.parameter->value.to_double_vector();
    const double largest = std::abs(*std::max_element(values.begin(), values.end(), [](double a, double b) {
      return std::abs(a) < std::abs(b);
    }));
    INFO(p.name);
    CHECK(largest <= 0.25);
    CHECK(largest > 0.2);
  }
}

TEST_CASE("LSTM works with only part of its outputs used, and reports bad inputs") {
  LSTM lstm({.input_size = 3, .hidden_size = 2, .num_layers = 2});
  lstm.initialize(1, 0, "decoder.rnn");
  Context ctx;
  const TensorList outputs = lstm.forward({test::random_tensor({2, 5, 3}, 1)}, ctx);
  CHECK(outputs[0].shape() == Shape{2, 5, 2});
  CHECK(outputs[1].shape() == Shape{2, 2, 2});
  // Only the final hidden state feeds the loss.
  const TensorList grads = lstm.backward({Tensor(), test::random_tensor({2, 2, 2}, 2), Tensor()}, ctx);
  REQUIRE(grads.size() == 1);
  CHECK(std::sqrt(ops::sum_of_squares(grads[0])) > 0.0);
  CHECK(ctx.saved_bytes() == 0);
  CHECK_THROWS_WITH(lstm.forward({Tensor::zeros({2, 5, 4})}, ctx),
                    Catch::Contains("decoder.rnn") && Catch::Contains("[2, 5, 4]") && Catch::Contains("[8, 3]"));
  CHECK_THROWS_WITH(lstm.forward({Tensor::zeros({2, 5, 3}), Tensor::zeros({2, 1, 2}), Tensor::zeros({2, 1, 2})}, ctx),
                    Catch::Contains("h0"));
}
