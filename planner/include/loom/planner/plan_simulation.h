// The end-to-end check of a plan: its schedule (DAPPLE 1F1B or GPipe, from loom::schedule) run
// through the schedule simulator with the cost model's per-stage costs — compute of the busiest
// replica, the allreduce (or, when overlapped, the part the last backward does not hide), each
// boundary as a link whose bandwidth and latency give the cost model's transfer time. The
// simulator plays the actual action order, so it checks the closed-form latency of
// cost_model.h; where they differ, the simulator lets a boundary carry activations and gradients
// at the same time, and stages wait for real rather than by formula.
#pragma once

#include <loom/schedule/schedule.h>
#include <loom/schedule/simulator.h>

#include <loom/planner/cost_model.h>
#include <loom/planner/plan.h>

namespace loom::planner {

// The simulator's cost model for `plan` (one schedule::StageCost per stage, one Link per boundary).
schedule::CostModel simulation_costs(const Profile& profile, const Cluster& cluster, const Plan& plan,
                                     const CostOptions& options = {});

schedule::SimulationResult simulate_plan(const Profile& profile, const Cluster& cluster, const Plan& plan,
                                         const CostOptions& options = {});

}  // namespace loom::planner
