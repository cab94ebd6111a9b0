// Names and tokens of actions; the parser lives in text.cpp.
#include <loom/schedule/action.h>

namespace loom::schedule {

bool is_compute(Op op) {
  return op == Op::Forward || op == Op::Backward || op == Op::BackwardInput || op == Op::BackwardWeight;
}

bool is_send(Op op) { return op == Op::SendActivation || op == Op::SendGradient; }
bool is_receive(Op op) { return op == Op::RecvActivation || op == Op::RecvGradient; }
bool is_communication(Op op) { return is_send(op) || is_receive(op); }
bool starts_backward(Op op) { return op == Op::Backward || op == Op::BackwardInput; }
bool ends_backward(Op op) { return op == Op::Backward || op == Op::BackwardWeight; }

std::string_view op_name(Op op) {
  switch (op) {
    case Op::Forward: return "F";
    case Op::Backward: return "B";
    case Op::BackwardInput: return "BI";
    case Op::BackwardWeight: return "BW";
    case Op::SendActivation: return "SA";
    case Op::RecvActivation: return "RA";
    case Op::SendGradient: return "SG";
    case Op::RecvGradient: return "RG";
    case Op::AllReduce: return "AR";
    case Op::Step: return "STEP";
  }
  return "?";
}

std::string to_string(const Action& action, bool with_chunk) {
  std::string token(op_name(action.op));
  if (action.op == Op::AllReduce || action.op == Op::Step) return token;
  token += std::to_string(action.microbatch);
  if (with_chunk) {
    token += 'c';
    token += std::to_string(action.chunk);
  }
  if (action.version >= 0) {
    token += '@';
    token += std::to_string(action.version);
  }
  return token;
}

}  // namespace loom::schedule
