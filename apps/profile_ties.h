// The parameter ties of one of loom's models as a profile records them (planner::LayerTie): the
// blocks of the canonical parameter and of its copy, and the copy's bytes (f32), so that the
// planner counts a tie with both blocks on one stage once (runtime/tied_parameters.h).
#pragma once

#include <vector>

#include <loom/models/model.h>
#include <loom/planner/profile.h>

namespace loom::apps {

std::vector<planner::LayerTie> profile_ties(const ModelSpec& spec);

}  // namespace loom::apps
