// `loom profile`: measure each block of one of loom's models on this machine (see profiler.h),
// print a table and write the profile JSON that `loom plan --profile` reads.
#include <algorithm>
#include <cstdio>
#include <functional>
#include <vector>

#include <loom/planner/profile_json.h>

#include "analytic_profile.h"
#include "commands.h"
#include "model_options.h"
#include "profile_ties.h"
#include "profiler.h"

namespace loom::apps {

namespace {

void print_profile(const planner::Profile& profile, const ModelSpec& spec) {
  std::printf("loom profile: %s | micro-batch %g | %s\n", spec.describe().c_str(), profile.microbatch,
              profile.device.c_str());
  std::printf("%5s  %-14s %10s %10s %14s %14s %14s\n", "block", "name", "fwd ms", "bwd ms", "kept bytes",
              "output bytes", "param bytes");
  double forward = 0, backward = 0, kept = 0, parameters = 0;
  for (int i = 0; i < profile.size(); ++i) {
    const planner::LayerProfile& l = profile.layers[i];
    std::printf("%5d  %-14s %10.3f %10.3f %14.0f %14.0f %14.0f\n", i, l.name.c_str(), l.cost.forward_ms,
                l.cost.backward_ms, l.cost.activation_bytes, l.cost.boundary_bytes, l.parameter_bytes);
    forward += l.cost.forward_ms;
    backward += l.cost.backward_ms;
    kept += l.cost.activation_bytes;
    parameters += l.parameter_bytes;
  }
  std::printf("%5s  %-14s %10.3f %10.3f %14.0f %14s %14.0f\n", "", "total", forward, backward, kept, "", parameters);
}

// --also-at's sizes, checked before anything is measured.
void check_also_at(const std::vector<std::int64_t>& sizes, std::int64_t microbatch) {
  for (std::int64_t size : sizes) {
    LOOM_CHECK(size >= 1 && size <= (1 << 20), "--also-at: a micro-batch size must be in [1, 2^20], got ", size);
    LOOM_CHECK(size != microbatch && std::count(sizes.begin(), sizes.end(), size) == 1, "--also-at: micro-batch ",
               size, " is given twice (or equals --microbatch)");
  }
}

// Each size in `sizes` measured (or estimated) as the primary one was, added to every layer as an
// extra measurement: the planners then interpolate between measured sizes (planner/profile.h)
// instead of scaling the primary one linearly to the micro-batches a plan picks.
void add_measurements(planner::Profile& profile, const std::vector<std::int64_t>& sizes,
                      const std::function<planner::Profile(std::int64_t)>& measure) {
  for (std::int64_t size : sizes) {
    const planner::Profile other = measure(size);
    LOOM_CHECK(other.size() == profile.size(), "loom profile: the model has ", other.size(), " blocks at micro-batch ",
               size, " and ", profile.size(), " at ", profile.microbatch);
    for (int l = 0; l < profile.size(); ++l)
      profile.layers[l].extra.push_back({static_cast<double>(size), other.layers[l].cost});
  }
}

}  // namespace

void add_profile_command(CLI::App& app) {
  static ProfileOptions o;
  static std::string out, device_model;
  static std::vector<std::int64_t> also_at;
  static std::string precision = "fp32";
  CLI::App* cmd = app.add_subcommand("profile", "Measure each block of a model on this machine; write profile JSON");
  add_model_options(cmd, o.model, o.size, o.overrides);
  cmd->add_option("--microbatch", o.microbatch, "samples per micro-batch the costs are measured at")
      ->capture_default_str();
  cmd->add_option("--also-at", also_at,
                  "more micro-batch sizes to measure, e.g. 1,2,4: kept in the profile beside --microbatch's, so "
                  "the planners interpolate between measured sizes instead of scaling one linearly")
      ->delimiter(',');
  cmd->add_option("--out", out, "write the profile JSON here (the format `loom plan --profile` reads)");
  cmd->add_option("--threads", o.threads, "CPU math threads (default: LOOM_NUM_THREADS or all cores)");
  cmd->add_option("--repeats", o.repeats, "timed runs per block; the median is reported")->capture_default_str();
  cmd->add_option("--warmup", o.warmup, "untimed runs per block before timing (at least one is always run)")
      ->capture_default_str();
  cmd->add_option("--seed", o.seed, "seed of parameters and synthetic data")->capture_default_str();
  cmd->add_option("--device", o.device,
                  "measure on cpu, cuda (GPU 0), cuda:N or sim[:N] (each block's time with the device drained "
                  "before and after it)")
      ->capture_default_str();
  cmd->add_option("--device-model", device_model,
                  "do not measure: estimate each block on this accelerator (v100, a100, h100, h200) from the "
                  "model's FLOPs and bytes (a roofline; no weights are allocated, so paper sizes work)");
  cmd->add_option("--precision", precision,
                  "fp32, or with --device-model bf16 or fp16 (tensor-core math): recorded in the profile, and the "
                  "precision loom plan plans it for")
      ->capture_default_str()
      ->check(CLI::IsMember({"fp32", "bf16", "fp16"}));
  cmd->callback([] {
    const ModelSpec spec = make_model(o.model, o.overrides, parse_model_size(o.size));
    LOOM_CHECK(o.microbatch >= 1 && o.microbatch <= (1 << 20), "--microbatch must be in [1, 2^20], got ", o.microbatch);
    check_also_at(also_at, o.microbatch);
    LOOM_CHECK(precision == "fp32" || !device_model.empty(), "--precision ", precision,
               ": loom profile measures blocks in fp32; estimate ", precision, " with --device-model (a roofline), or ",
               "drop --precision");
    const bool half_precision = precision != "fp32";
    auto measure = [&spec, half_precision](std::int64_t microbatch) {
      ProfileOptions at = o;
      at.microbatch = microbatch;
      return device_model.empty()
                 ? profile_model(at)
                 : analytic_profile(spec, microbatch, planner::find_device_model(device_model), half_precision);
    };
    planner::Profile profile = measure(o.microbatch);
    add_measurements(profile, also_at, measure);
    profile.ties = profile_ties(spec);
    profile.model_size = model_size_name(spec.size);
    profile.model_settings = settings_text(spec.settings);
    profile.precision = precision;
    print_profile(profile, spec);
    if (!also_at.empty()) {
      std::printf("also measured at micro-batch");
      for (std::size_t i = 0; i < also_at.size(); ++i) std::printf("%s %lld", i ? "," : "", static_cast<long long>(also_at[i]));
      std::printf(" (in the profile's per-layer \"measurements\")\n");
    }
    if (!out.empty()) {
      planner::write_profile_json(profile, out);
      std::printf("wrote %s\n", out.c_str());
    }
  });
}

}  // namespace loom::apps
