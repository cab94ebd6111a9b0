// `loom train --resume DIR`: load_training_checkpoint on a checkpoint that loom wrote (one 4-element
// parameter, SGD), with its step directory's manifest.json (even first byte) or stage0.json (odd)
// replaced by the rest of the input. MPI runs as a singleton (no mpiexec); the load is collective over it.
#include <fstream>
#include <memory>
#include <sstream>

#include <mpi.h>

#include <loom/comm/communicator.h>
#include <loom/layers/optimizer.h>
#include <loom/runtime/training_checkpoint.h>

#include "fuzz_common.h"

namespace {

struct Checkpoint {
  std::unique_ptr<loom::comm::Communicator> world;
  loom::Parameter parameter;
  std::vector<loom::NamedParameter> parameters;
  std::unique_ptr<loom::Sgd> optimizer;
  loom::runtime::CheckpointLayout layout;
  std::string dir, manifest, stage;  // the files as loom wrote them
  std::string step;                  // the step directory, relative to the scratch directory
};

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

Checkpoint& checkpoint() {
  static Checkpoint c = [] {
    Checkpoint k;
    k.world = loom::comm::make_communicator(loom::comm::Backend::mpi, MPI_COMM_WORLD);
    k.parameter.name = "weight";
    k.parameter.value = loom::Tensor::full(loom::Shape{4}, 0.5);
    k.parameter.grad = loom::Tensor::zeros(loom::Shape{4});
    k.parameters = {{"blocks.0.weight", &k.parameter}};
    k.optimizer = std::make_unique<loom::Sgd>(k.parameters, loom::SgdOptions{0.9});
    k.layout.model = "mlp";
    k.layout.settings = {{"hidden", 4}};
    k.layout.blocks = {{0, 1}};
    k.layout.global_batch = 8;
    k.layout.seed = 1;
    k.dir = loom::fuzz::scratch_dir() + "/checkpoint";
    const std::string step_dir =
        loom::runtime::save_training_checkpoint(*k.world, k.dir, k.layout, 3, k.parameters, *k.optimizer, true, 1);
    k.step = "checkpoint/" + step_dir.substr(step_dir.rfind('/') + 1);
    k.manifest = read_all(step_dir + "/manifest.json");
    k.stage = read_all(step_dir + "/stage0.json");
    return k;
  }();
  return c;
}

}  // namespace

// Open MPI's singleton start-up leaks by design (and not all its frames symbolise, so a suppression
// list cannot name them): leak checking is off in this target only. Loom's own allocations on this
// path (JSON, safetensors) are leak-checked by fuzz_plan_json, fuzz_safetensors and the others.
extern "C" const char* __asan_default_options() { return "detect_leaks=0"; }

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  MPI_Init(argc, argv);
  (void)checkpoint();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  Checkpoint& c = checkpoint();
  const bool manifest = data[0] % 2 == 0;
  const std::string text = loom::fuzz::as_string(data + 1, size - 1);
  loom::fuzz::write_scratch_file(c.step + "/manifest.json", manifest ? text : c.manifest);
  loom::fuzz::write_scratch_file(c.step + "/stage0.json", manifest ? c.stage : text);
  loom::fuzz::rejecting_loom_errors(
      [&] { (void)loom::runtime::load_training_checkpoint(*c.world, c.dir, c.layout, c.parameters, *c.optimizer); });
  return 0;
}
