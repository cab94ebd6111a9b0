// One step of a rank's pipeline program: compute (F, B, BI, BW), a boundary transfer, the gradient
// allreduce or the optimizer step. A schedule is nothing but ordered lists of these, so the same
// object can be validated, simulated, executed and traced.
//
// Text form of one action (docs/schedules.md has the full notation):
//   F3  B3  BI3  BW3        compute on micro-batch 3
//   RA3 SA3 RG3 SG3         receive/send activation, receive/send gradient of micro-batch 3
//   AR  STEP                allreduce of this stage's gradients, optimizer step
//   F3c1                    ... on virtual-stage chunk 1 of this rank (printed only when chunks > 1)
//   F3@2                    ... using weight version 2 (asynchronous schedules only)
//   (F7c0;B3c1)             an overlapped pair: F7c0 and B3c1 run as one action (DualPipeV)
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace loom::schedule {

enum class Op : std::uint8_t {
  Forward,         // F
  Backward,        // B: input and weight gradients together
  BackwardInput,   // BI: input gradient only (zero-bubble split)
  BackwardWeight,  // BW: weight gradient only, after BI
  SendActivation,  // SA: start sending this chunk's output to the next virtual stage
  RecvActivation,  // RA: wait for this chunk's input from the previous virtual stage
  SendGradient,    // SG: start sending the gradient of this chunk's input to the previous virtual stage
  RecvGradient,    // RG: wait for the gradient of this chunk's output from the next virtual stage
  AllReduce,       // AR: allreduce the stage's parameter gradients across its replicas
  Step,            // STEP: optimizer step (creates the next weight version)
};

// DualPipeV's overlapped forward + backward: two compute actions of one rank, next to each other in
// its program (the forward first), run as one action whose halves the executor interleaves (overlap.h).
enum class Overlap : std::uint8_t { none, forward_half, backward_half };

struct Action {
  Op op = Op::Forward;
  int microbatch = -1;  // -1 for AR and STEP
  int chunk = 0;        // virtual-stage chunk on this rank, 0..chunks-1
  int version = -1;     // weight version used (asynchronous schedules), -1 when not tracked
  Overlap overlap = Overlap::none;

  friend bool operator==(const Action&, const Action&) = default;
};

inline Action forward(int microbatch, int chunk = 0) { return {Op::Forward, microbatch, chunk, -1}; }
inline Action backward(int microbatch, int chunk = 0) { return {Op::Backward, microbatch, chunk, -1}; }
inline Action backward_input(int microbatch, int chunk = 0) { return {Op::BackwardInput, microbatch, chunk, -1}; }
inline Action backward_weight(int microbatch, int chunk = 0) { return {Op::BackwardWeight, microbatch, chunk, -1}; }
inline Action allreduce() { return {Op::AllReduce, -1, 0, -1}; }
inline Action optimizer_step() { return {Op::Step, -1, 0, -1}; }

bool is_compute(Op op);        // F, B, BI, BW
bool is_communication(Op op);  // SA, RA, SG, RG
bool is_send(Op op);
bool is_receive(Op op);
bool starts_backward(Op op);   // B or BI: consumes the output gradient, produces the input gradient
bool ends_backward(Op op);     // B or BW: the micro-batch's saved activations are released after it

// "F", "BI", "SA", "STEP", ...
std::string_view op_name(Op op);

// The token for `action`; the chunk suffix is written only when `with_chunk`.
std::string to_string(const Action& action, bool with_chunk = false);

}  // namespace loom::schedule
