// `loom train` (see training.h): the Trainer, rank 0's progress bar or log lines, and the metrics file.
#include "training.h"
#include "model_flops.h"
#include "rate_text.h"  // rate_text, duration_text

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <loom/core/bytes_text.h>
#include <loom/comm/process_groups.h>
#include <loom/comm/mpi_session.h>
#include <loom/base/error.h>
#include <loom/core/threads.h>
#include <loom/core/timer.h>

namespace loom::apps {

namespace {

// {"parameters": ..., ..., "total": ...}: peak bytes by memory category, then all of them.
nlohmann::json peaks_json(const runtime::MemoryPeaks& peaks) {
  nlohmann::json json = nlohmann::json::object();
  for (std::size_t c = 0; c < kMemoryCategoryCount; ++c)
    json[std::string(memory_category_name(static_cast<MemoryCategory>(c)))] = peaks[c];
  json["total"] = peaks[kMemoryCategoryCount];
  return json;
}

// The done line's note on a resumed run: which of the run's steps this process trained
// (" (steps 4 to 6 of 6)"); empty for a run from the start.
std::string resumed_steps_text(const runtime::Trainer& trainer) {
  if (trainer.first_step() == 0) return "";
  return " (steps " + std::to_string(trainer.first_step() + 1) + " to " + std::to_string(trainer.step()) + " of " +
         std::to_string(trainer.layout().steps) + ")";
}

// What rank 0 shows and writes: a progress bar per epoch (with --epochs) or a line per logged
// step, the metrics file's JSON lines, and the epoch and checkpoint lines.
class Progress {
 public:
  Progress(const TrainOptions& o, const runtime::Trainer& trainer, double flops_per_sample, PeakRate peak)
      : o_(o), trainer_(trainer), layout_(trainer.layout()), fp16_(trainer.config().precision.precision == runtime::Precision::fp16),
        flops_per_sample_(flops_per_sample), peak_(std::move(peak)) {
    if (!o.metrics.empty()) {
      metrics_ = std::make_unique<std::ofstream>(o.metrics);
      LOOM_CHECK(metrics_->good(), o.metrics, ": cannot open the metrics file for writing (", std::strerror(errno), ")");
    }
    bar_ = !o.quiet && o.epochs > 0;
    first_step_ = trainer.first_step();
  }

  void step(const runtime::StepReport& r) {
    if (r.step == first_step_ + 1) compare_with_plan(r);
    warn_stragglers(r);
    samples_since_log_ += layout_.global_batch;
    skipped_since_log_ += r.skipped ? 1 : 0;
    if (r.step % o_.log_every != 0 && r.step != layout_.steps) return;
    const std::int64_t steps = samples_since_log_ / layout_.global_batch;
    const double seconds = std::max(1e-9, since_log_.elapsed_ms() / 1000.0);
    const double rate = static_cast<double>(samples_since_log_) / seconds;
    const std::string rate_line = rate_text(samples_since_log_, seconds, steps);
    samples_since_log_ = 0;
    since_log_.reset();
    if (metrics_) {
      nlohmann::json by_stage = nlohmann::json::array();
      for (const runtime::MemoryPeaks& stage : r.stage_peaks) by_stage.push_back(peaks_json(stage));
      nlohmann::json device_by_stage = nlohmann::json::array();
      for (const DeviceMemoryInfo& d : r.stage_device_memory)
        device_by_stage.push_back({{"free_bytes", d.free_bytes}, {"total_bytes", d.total_bytes}});
      nlohmann::json line = {{"step", r.step}, {"loss", r.loss}, {"lr", r.lr}, {"samples_per_s", rate},
                             {"step_seconds", seconds / static_cast<double>(steps)}, {"peak_bytes", peaks_json(r.peaks)},
                             {"peak_bytes_by_stage", by_stage}, {"device_memory_by_stage", device_by_stage},
                             {"rank_busy_seconds", r.rank_busy_seconds},
                             {"model_gflops_per_s", flops_per_sample_ * rate / 1e9}};
      if (!layout_.predicted_peak_bytes.empty()) line["predicted_peak_bytes_by_stage"] = layout_.predicted_peak_bytes;
      if (peak_.gflops > 0) line["mfu"] = flops_per_sample_ * rate / 1e9 / peak_.gflops;
      if (fp16_) {
        line["loss_scale"] = r.loss_scale;
        line["skipped"] = r.skipped;
      }
      write(line);
    }
    if (bar_) {
      draw_bar(r, rate_line);
    } else if (!o_.quiet) {
      std::printf("step %lld | loss %.5f | lr %.4g | %s | %s | peak %s (activations %s)%s\n",
                  static_cast<long long>(r.step), r.loss, r.lr, rate_line.c_str(),
                  flops_text(flops_per_sample_, rate, peak_).c_str(),
                  bytes_text(static_cast<double>(r.peaks[kMemoryCategoryCount])).c_str(),
                  bytes_text(static_cast<double>(r.peaks[static_cast<std::size_t>(MemoryCategory::activations)])).c_str(),
                  fp16_ ? loss_scale_text(r).c_str() : "");
      skipped_since_log_ = 0;
      std::fflush(stdout);
    }
  }

  void epoch(const runtime::EpochReport& r) {
    end_bar_line();
    if (!o_.quiet) std::printf("epoch %lld: test accuracy %.2f%%\n", static_cast<long long>(r.epoch), 100.0 * r.test_accuracy);
    std::fflush(stdout);
    if (metrics_) write({{"epoch", r.epoch}, {"test_accuracy", r.test_accuracy}});
  }

  void checkpoint(const runtime::CheckpointReport& r) {
    if (o_.quiet) return;
    end_bar_line();
    std::printf("checkpoint: %s after step %lld\n", r.dir.c_str(), static_cast<long long>(r.step));
    std::fflush(stdout);
  }

 private:
  // After the first step of a run from a plan: each stage's measured peak (the most of its ranks)
  // beside the plan's prediction, one line; a warning for each stage more than 5% over its
  // prediction or over the memory the plan was made for.
  void compare_with_plan(const runtime::StepReport& r) const {
    const std::vector<double>& predicted = layout_.predicted_peak_bytes;
    if (predicted.empty() || r.stage_peaks.size() != predicted.size()) return;
    std::string line;
    for (std::size_t s = 0; s < predicted.size(); ++s) {
      const auto measured = static_cast<double>(r.stage_peaks[s][kMemoryCategoryCount]);
      char cell[160];
      std::snprintf(cell, sizeof cell, "%sstage %zu %s (predicted %s, %+.1f%%)", s ? " | " : "", s,
                    bytes_text(measured).c_str(), bytes_text(predicted[s]).c_str(), 100 * (measured / predicted[s] - 1));
      line += cell;
      const double cap = layout_.planned_device_memory;
      if (measured > predicted[s] * 1.05 || (cap > 0 && measured > cap))
        std::fprintf(stderr, "loom train: warning: stage %zu holds %s per rank after step %lld, %s%s than %s predicts "
                     "(%s)%s\n", s, bytes_text(measured).c_str(), static_cast<long long>(r.step),
                     bytes_text(measured - predicted[s]).c_str(), measured > predicted[s] ? " more" : " less",
                     o_.plan.c_str(), bytes_text(predicted[s]).c_str(),
                     cap > 0 && measured > cap ? (", over the " + bytes_text(cap) + " per device it was planned for").c_str()
                                               : "");
    }
    if (!o_.quiet) std::printf("memory per rank after step %lld, against %s: %s\n", static_cast<long long>(r.step),
                               o_.plan.c_str(), line.c_str());
  }

  // A rank whose busy time per step (its time not spent waiting for the others) has been over the
  // rule's ratio x the median of its stage's other replicas for its steps in a row: one warning
  // line per such streak (runtime/straggler.h).
  void warn_stragglers(const runtime::StepReport& r) {
    const runtime::StragglerRule& rule = trainer_.straggler_rule();
    for (int rank : r.stragglers) {
      end_bar_line();
      const double busy = r.rank_busy_seconds.at(static_cast<std::size_t>(rank));
      const double reference = r.busy_reference_seconds.at(static_cast<std::size_t>(rank));
      std::fprintf(stderr,
                   "loom train: warning: rank %d (stage %d) is a straggler: busy %.3g s per step at step %lld, %.1fx the "
                   "median %.3g s of its stage's other replicas, for %d steps in a row\n",
                   rank, trainer_.stage_of_rank(rank), busy, static_cast<long long>(r.step), busy / reference, reference,
                   rule.steps);
    }
  }
  void draw_bar(const runtime::StepReport& r, const std::string& rate) {
    const std::int64_t per_epoch = layout_.steps_per_epoch, in_epoch = (r.step - 1) % per_epoch + 1;
    // Without a terminal the bar is a log line: about 20 per epoch, not one per step.
    if (!tty_ && in_epoch % std::max<std::int64_t>(1, per_epoch / 20) != 0 && in_epoch != per_epoch) return;
    const double elapsed = total_.elapsed_ms() / 1000.0;
    const double eta = elapsed / static_cast<double>(r.step - first_step_) * static_cast<double>(layout_.steps - r.step);
    const int width = 30, filled = static_cast<int>(width * in_epoch / per_epoch);
    std::fprintf(stderr, "%sepoch %lld/%lld [%s%s] %lld/%lld loss %.4f %s ETA %s%s", tty_ ? "\r" : "",
                 static_cast<long long>((r.step - 1) / per_epoch + 1), static_cast<long long>(o_.epochs),
                 std::string(filled, '#').c_str(), std::string(width - filled, '.').c_str(),
                 static_cast<long long>(in_epoch), static_cast<long long>(per_epoch), r.loss, rate.c_str(),
                 duration_text(eta).c_str(), tty_ ? "" : "\n");
  }
  // fp16: " | loss scale S", and how many steps since the last line were skipped for overflow.
  std::string loss_scale_text(const runtime::StepReport& r) const {
    int exponent = 0;
    const bool power_of_two = std::frexp(r.loss_scale, &exponent) == 0.5;
    char text[96];
    if (power_of_two)
      std::snprintf(text, sizeof text, " | loss scale 2^%d", exponent - 1);
    else
      std::snprintf(text, sizeof text, " | loss scale %g", r.loss_scale);
    std::string line = text;
    if (skipped_since_log_ > 0)
      line += loom::detail::concat(", ", skipped_since_log_, skipped_since_log_ == 1 ? " step" : " steps",
                                   " skipped (fp16 overflow)");
    return line;
  }
  void end_bar_line() {
    if (bar_ && tty_) std::fprintf(stderr, "\n");
  }
  void write(const nlohmann::json& line) {
    *metrics_ << line.dump() << "\n";
    metrics_->flush();
    // A full disk: errno still holds the reason of the write that failed.
    LOOM_CHECK(metrics_->good(), o_.metrics, ": cannot write the metrics file (", std::strerror(errno), ")");
  }

  const TrainOptions& o_;
  const runtime::Trainer& trainer_;
  const runtime::RunLayout& layout_;
  std::unique_ptr<std::ofstream> metrics_;
  bool bar_ = false;
  const bool tty_ = isatty(fileno(stderr));
  std::int64_t first_step_ = 0, samples_since_log_ = 0, skipped_since_log_ = 0;
  const bool fp16_;
  const double flops_per_sample_;
  const PeakRate peak_;
  Stopwatch total_, since_log_;
};

}  // namespace

TrainSummary train(const TrainOptions& o, runtime::ResolvedConfig run, const std::function<void(const TrainedStage&)>& on_finish) {
  LOOM_CHECK(o.log_every >= 1, "--log-every must be at least 1");
  runtime::Trainer trainer(std::move(run));
  const double flops = model_flops_per_sample(trainer.model());
  // Collective, and only where someone reads it: measuring takes rank 0's cores for a second.
  const PeakRate peak = o.quiet && o.metrics.empty()
                            ? PeakRate{}
                            : job_peak(o.peak_gflops, trainer.device().is_cpu(), num_threads(),
                                       runtime::value_dtype(trainer.config().precision.precision));
  std::unique_ptr<Progress> progress;
  runtime::TrainerHooks hooks;
  if (comm::world_rank() == 0) {
    progress = std::make_unique<Progress>(o, trainer, flops, peak);
    if (!o.quiet)
      std::printf("loom train: %s\nloom train: %s\nloom train: %.4g GFLOP per trained sample (forward x 3); %s\n",
                  trainer.describe().c_str(), trainer.groups().topology().describe_hosts().c_str(), flops / 1e9,
                  peak_text(peak).c_str());
    if (!o.quiet && !trainer.straggler_notice().empty())
      std::printf("loom train: busy times not compared (no straggler warnings): %s\n", trainer.straggler_notice().c_str());
    if (!o.quiet && trainer.first_step() > 0)
      std::printf("resumed from %s after step %lld\n", trainer.resumed_from().c_str(),
                  static_cast<long long>(trainer.first_step()));
    std::fflush(stdout);
    hooks.on_step = [&](const runtime::StepReport& r) { progress->step(r); };
    hooks.on_epoch = [&](const runtime::EpochReport& r) { progress->epoch(r); };
    hooks.on_checkpoint = [&](const runtime::CheckpointReport& r) { progress->checkpoint(r); };
  }
  const TrainSummary summary = trainer.run(hooks);
  if (comm::world_rank() == 0 && !o.quiet)
    std::printf("done: %lld steps%s, %lld samples in %.1f s (%s, %s)\n", static_cast<long long>(summary.losses.size()),
                resumed_steps_text(trainer).c_str(), static_cast<long long>(summary.samples), summary.seconds,
                rate_text(summary.samples, summary.seconds, static_cast<std::int64_t>(summary.losses.size())).c_str(),
                flops_text(flops, static_cast<double>(summary.samples) / std::max(1e-9, summary.seconds), peak).c_str());
  if (on_finish) on_finish({trainer.stage(), trainer.chunks()});
  return summary;
}

}  // namespace loom::apps
