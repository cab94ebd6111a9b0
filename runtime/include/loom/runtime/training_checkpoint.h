// The Trainer's checkpoints (`loom train --checkpoint DIR` / `--resume DIR`), committed atomically
// across ranks like PyTorch DCP and Megatron-LM do:
//
//   DIR/step-000120/stage<s>.safetensors, stage<s>.json   each stage's files, by replica 0 of the stage
//   DIR/step-000120/manifest.json                         rank 0, once every stage's files are in place
//   DIR/latest                                            "step-000120": the commit, by rank 0
//
// A save writes its own step directory; every file is written under a .tmp name, flushed to the
// disk and renamed (loom/base/files.h). Only after every rank has written its files (a control
// collective under the watchdog) does rank 0 write the manifest and then move DIR/latest to the
// new directory: that rename is the commit. A kill, a stopped rank or a full disk before it leaves
// DIR/latest at the previous checkpoint, which stays whole; the half-written directory is
// removed by the next save (or at once, when the save failed with an error). After the commit
// the oldest complete checkpoints beyond the newest `keep` are deleted.
//
// A stage's file holds all its chunks' parameters (and buffers) and the optimizer state, every
// tensor named by its parameter (whose name starts with its block's global index), with its own
// checksum; replicas of a stage are identical after every synchronous step, so only replica 0
// writes. A resume at another layout (stages, replicas, partition, chunks) reads, on each rank,
// only the tensors of its own blocks from the stage files that hold them (checkpoint_reader.h).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <loom/comm/communicator.h>
#include <loom/layers/checkpoint.h>
#include <loom/layers/layer.h>
#include <loom/layers/optimizer.h>
#include <loom/runtime/loss_scaler.h>
#include <loom/runtime/precision.h>

namespace loom::runtime {

// What a checkpoint records of the run that wrote it. A resume must agree on the model, its
// settings, the global batch, the seed, the optimizer and the precision; the layout (stages,
// replicas, partition, chunks) may differ: tensors are found by parameter name. The length, the
// learning rate and its schedule may change (resumed_schedule_start).
struct CheckpointLayout {
  std::string model;
  std::map<std::string, double> settings;  // the model's settings after size and overrides, compared as values
  int stage = 0, stages = 1, chunks = 1;
  std::vector<std::pair<std::int64_t, std::int64_t>> blocks;  // this stage's chunks: [first, last)
  std::int64_t global_batch = 0;
  std::uint64_t seed = 0;
  std::string optimizer;  // optimizer_kind_name; empty: not checked
  // The learning-rate path: the schedule, the step it started at (LrSchedule::first_step), the
  // run's length and base learning rate.
  LrSchedule::Kind lr_schedule = LrSchedule::Kind::constant;
  std::int64_t lr_start = 0;
  std::int64_t total_steps = 0;
  double lr = 0.0;
  // precision.h: a bf16 or fp16 checkpoint holds the fp32 master weights; a resume must train in
  // the precision that wrote it. Checkpoints without the field are fp32.
  Precision precision = Precision::fp32;
  // The whole layout, recorded in the manifest (for `loom checkpoint inspect`; a resume does not need it).
  std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>> stage_blocks;  // every stage's chunks
  std::vector<int> replicas;                                                     // every stage's
};

// Collective over `world` (every rank of the run). `writer`: this rank writes its stage's files.
// `keep`: complete checkpoints to keep (at least 1). Any rank's failure is a loom::Error on every
// rank, and DIR/latest then still names the previous checkpoint. Returns the step directory.
// `scaler` (fp16): its scale and good-step count go into the manifest ("loss_scale").
// `gathered` (--zero 1): the stage file's tensors as its replicas gathered them from their slices
// (zero_shard.h), written in place of `parameters` and `optimizer`'s state.
struct StageTensors {
  safetensors::NamedTensors tensors;  // host tensors; optimizer state as "optimizer.<state name>"
  OptimizerRecord optimizer;
  // ZeRO-1: this replica's slices of the optimizer state, each flat, written by every replica to
  // stage<s>.zero<r>.safetensors with its element range {offset, total} of the whole tensor.
  int replica = 0, replicas = 0;  // replicas > 0: the slices are written
  safetensors::NamedTensors slices;
  std::map<std::string, std::pair<std::int64_t, std::int64_t>> ranges;
};
std::string save_training_checkpoint(comm::Communicator& world, const std::string& dir, const CheckpointLayout& layout,
                                     std::int64_t step, const std::vector<NamedParameter>& parameters,
                                     Optimizer& optimizer, bool writer, int keep,
                                     const LossScaler* scaler = nullptr, const StageTensors* gathered = nullptr);

// Which checkpoint --resume DIR loads: the step directory DIR/latest names; else, when DIR holds
// a manifest.json itself, DIR (a step directory given directly, or the single-directory layout
// of loom before step directories); else the newest complete step directory in DIR.
struct ResumePoint {
  std::string directory;  // the checkpoint that was loaded
  std::int64_t step = 0;  // the step it was taken after
  // Its run's learning-rate schedule and the step that started at (0 in checkpoints of loom before
  // resumes could change it); no schedule in checkpoints before the field.
  std::optional<LrSchedule::Kind> lr_schedule;
  std::int64_t lr_start = 0;
};

// The step a resumed run's learning-rate schedule starts at. The same kind as the checkpoint's goes
// on from where that started, over this run's total (a longer cosine or linear run stretches it);
// another kind (--lr-schedule) starts at the checkpoint's step, its warm-up too.
std::int64_t resumed_schedule_start(const ResumePoint& point, LrSchedule::Kind run);

// The step directory --resume DIR loads (as ResumePoint says); an error naming DIR when none.
std::string find_checkpoint(const std::string& dir);

// The base learning rate of the run that wrote --resume DIR's checkpoint (a resume without --lr
// keeps it); nothing for checkpoints of loom before the field.
std::optional<double> checkpoint_learning_rate(const std::string& dir);

// Finds DIR's checkpoint, checks its manifests against `layout` and loads this stage's parameters
// and optimizer state, and (fp16) restores `scaler` from the manifest. Every problem is a
// loom::Error naming the file, on every rank.
// `renames`: tied copies (copy name -> canonical name) read from their canonical's tensors.
// `offsets` (--zero 1): the optimizer holds a slice of these parameters, starting at this element.
ResumePoint load_training_checkpoint(comm::Communicator& world, const std::string& dir, const CheckpointLayout& layout,
                                     const std::vector<NamedParameter>& parameters, Optimizer& optimizer,
                                     LossScaler* scaler = nullptr, const std::map<std::string, std::string>& renames = {},
                                     const std::map<std::string, std::int64_t>& offsets = {});

}  // namespace loom::runtime
