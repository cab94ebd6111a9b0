// The executor on its own, under mpiexec -n 2: a 4-block MLP split into 2 stages runs one step of
// M = 4 micro-batches; per micro-batch logits (from evaluate, last stage) and every block's
// accumulated gradients (seen by the STEP callback before they are zeroed) equal a one-rank run of
// the whole chain with plain layer calls. DAPPLE (B) and ZB-H1 (BI + BW), with and without
// recomputation.
#include <catch2/catch.hpp>

#include <cmath>

#include <loom/comm/process_groups.h>
#include <loom/comm/mpi_session.h>
#include <loom/runtime/executor.h>
#include <loom/schedule/generators.h>

#include "sequential.h"

using namespace loom;

namespace {
constexpr std::uint64_t kSeed = 11;
constexpr std::int64_t kBatch = 16;
constexpr int kMicrobatches = 4;

void check_close(const std::vector<float>& got, const std::vector<float>& want, const std::string& what) {
  REQUIRE(got.size() == want.size());
  double worst = 0;
  for (std::size_t i = 0; i < got.size(); ++i)
    worst = std::max(worst, std::abs(double(got[i]) - want[i]) / (1e-6 + std::abs(double(want[i]))));
  INFO(what << ": worst relative difference " << worst);
  CHECK(worst <= 1e-5);
}
// Rows of the synthetic data in the first epoch's order, kBatch per batch.
runtime::BatchReader synthetic_reader(const ModelSpec& spec) {
  std::shared_ptr<Dataset> data = open_dataset("synthetic", DatasetSplit::train, spec.data, kSeed);
  const std::vector<std::int64_t> order = epoch_order(data->size(), kSeed, 0);
  return [data, order](const runtime::BatchRequest& r, TensorList& inputs, Tensor& targets) {
    const std::vector<std::int64_t> indices(order.begin() + r.step * kBatch + r.first,
                                            order.begin() + r.step * kBatch + r.first + r.count);
    Tensor x;
    data->read(indices, x, targets);
    inputs = {x};
  };
}
}  // namespace

TEST_CASE("executor: 2 stages equal one rank, per micro-batch and per gradient", "[runtime][executor][mpi]") {
  REQUIRE(comm::world_size() == 2);
  const ModelSpec spec = make_model("mlp", "input=12,hidden=24,layers=4,classes=5");
  const test::SequentialRun reference = test::run_sequentially(spec, kSeed, kBatch, kMicrobatches, 1, 0.0);
  const int rank = comm::world_rank();
  const runtime::BatchReader reader = synthetic_reader(spec);
  for (const char* kind : {"dapple", "zb-h1"}) {
    for (bool recompute : {false, true}) {
      DYNAMIC_SECTION(kind << (recompute ? " with recomputation" : "")) {
        const schedule::Schedule sched = schedule::make_schedule({kind, 2, kMicrobatches, 2, 3, {}});
        comm::ProcessGroups groups(comm::ParallelLayout::uniform(2, 1), comm::Topology(2));
        auto chain = spec.build(rank * 2, rank * 2 + 2);
        chain->initialize(kSeed);
        LayerPtr loss = spec.make_loss();
        std::map<std::string, std::vector<float>> gradients;
        std::vector<std::int64_t> stepped;
        auto on_step = [&](std::int64_t batch) {
          stepped.push_back(batch);
          for (const NamedParameter& p : trainable_parameters(*chain)) gradients[p.name] = p.parameter->grad.to_float_vector();
        };
        runtime::ExecutorOptions options;
        options.global_batch = kBatch;
        options.runner.seed = kSeed;
        options.runner.recompute.all = recompute;
        runtime::Executor executor(sched, rank, groups, {chain.get()}, loss.get(), on_step, options);
        const runtime::StepResult result = executor.run(0, reader);
        CHECK(stepped == std::vector<std::int64_t>{0});
        REQUIRE(gradients.size() == 4);  // two Linear blocks: weight and bias each
        for (const auto& [name, grad] : gradients) check_close(grad, reference.gradients.at(name), name);
        if (rank == 1) CHECK(result.loss_sums.at(0) == Approx(reference.losses[0]).epsilon(1e-6));

        std::vector<std::vector<float>> logits(kMicrobatches);
        executor.evaluate(0, kBatch, reader, [&](std::int64_t first_row, const Tensor& out, const Tensor&) {
          for (int j = 0; j < kMicrobatches; ++j)
            if (comm::even_split(kBatch, kMicrobatches, j).begin == first_row) logits[j] = out.to_float_vector();
        });
        if (rank == 1)
          for (int j = 0; j < kMicrobatches; ++j) check_close(logits[j], reference.logits[j], "logits of micro-batch " + std::to_string(j));
      }
    }
  }
}

// DualPipeV (issue 28): 4 virtual stages in a V on 2 ranks (rank 0 holds blocks 0 and 3, rank 1
// blocks 1 and 2, the turn local), M = 4. The gradients equal the one-rank run's, and the trace
// shows each overlapped pair as the executor ran it: both halves marked overlapped, in the pair's
// window, and each half's send right after that half ends, before the pair's group is over.
TEST_CASE("executor: DualPipeV's overlapped pairs, 2 ranks in a V, equal one rank", "[runtime][executor][mpi]") {
  REQUIRE(comm::world_size() == 2);
  const ModelSpec spec = make_model("mlp", "input=12,hidden=24,layers=8,classes=5");
  const test::SequentialRun reference = test::run_sequentially(spec, kSeed, kBatch, kMicrobatches, 1, 0.0);
  const int rank = comm::world_rank();
  const runtime::BatchReader reader = synthetic_reader(spec);
  const schedule::Schedule sched = schedule::dualpipev(2, kMicrobatches);
  comm::ProcessGroups groups(comm::ParallelLayout::from_table({{0}, {1}, {1}, {0}}), comm::Topology(2), {},
                             Device::cpu(),
                             {comm::BoundaryPath::host_staged, comm::BoundaryPath::local, comm::BoundaryPath::host_staged});
  // 8 blocks, 2 per virtual stage: virtual stage v holds blocks 2v, 2v + 1.
  const int v0 = sched.virtual_stage(rank, 0), v1 = sched.virtual_stage(rank, 1);
  auto chunk0 = spec.build(2 * v0, 2 * v0 + 2);
  auto chunk1 = spec.build(2 * v1, 2 * v1 + 2);
  chunk0->initialize(kSeed);
  chunk1->initialize(kSeed);
  LayerPtr loss = spec.make_loss();
  std::map<std::string, std::vector<float>> gradients;
  auto on_step = [&](std::int64_t) {
    for (Chain* chunk : {chunk0.get(), chunk1.get()})
      for (const NamedParameter& p : trainable_parameters(*chunk)) gradients[p.name] = p.parameter->grad.to_float_vector();
  };
  runtime::ExecutorOptions options;
  options.global_batch = kBatch;
  options.runner.seed = kSeed;
  runtime::Executor executor(sched, rank, groups, {chunk0.get(), chunk1.get()}, loss.get(), on_step, options);
  std::vector<runtime::ActionEvent> events;
  executor.set_event_observer([&](const runtime::ActionEvent& e) { events.push_back(e); });
  const runtime::StepResult result = executor.run(0, reader);
  REQUIRE(gradients.size() == 8);  // 4 Linear blocks on this rank: weight and bias each
  for (const auto& [name, grad] : gradients) check_close(grad, reference.gradients.at(name), name);
  if (rank == 0) CHECK(result.loss_sums.at(0) == Approx(reference.losses[0]).epsilon(1e-6));

  // Every pair of the program shows up as overlapped slices; each half's send leaves once that half
  // is done, and the forward's (when the forward finished first) before the backward half ends.
  const auto& program = sched.programs[static_cast<std::size_t>(rank)];
  auto last_end = [&](const schedule::Action& a) {
    double end = -1;
    for (const runtime::ActionEvent& e : events)
      if (e.action == a) end = std::max(end, e.end_us);
    return end;
  };
  auto start_of = [&](const schedule::Action& a) {
    for (const runtime::ActionEvent& e : events)
      if (e.action == a) return e.start_us;
    return -1.0;
  };
  const auto pairs = schedule::overlap_groups(program);
  REQUIRE(!pairs.empty());
  for (const schedule::OverlapGroup& g : pairs) {
    const schedule::Action& f = program[g.forward];
    const schedule::Action& b = program[g.forward + 1];
    INFO("rank " << rank << " (" << schedule::to_string(f, true) << ";" << schedule::to_string(b, true) << ")");
    CHECK(f.overlap == schedule::Overlap::forward_half);
    const double f_end = last_end(f), b_end = last_end(b);
    REQUIRE(f_end >= 0);
    REQUIRE(b_end >= 0);
    if (g.forward_send) {
      CHECK(start_of(program[*g.forward_send]) >= f_end);
      if (f_end < b_end) CHECK(start_of(program[*g.forward_send]) < b_end);  // left while the backward computed
    }
    if (g.backward_send) CHECK(start_of(program[*g.backward_send]) >= b_end);
  }
}
