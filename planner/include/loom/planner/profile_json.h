// Profile JSON: loom's own profile format (written by `loom profile`, read by `loom plan`).
//
//   {"format": "loom-profile", "version": 1, "model": "bert-48", "microbatch": 2,
//    "layers": [{"name": "layer_0", "forward_ms": 2.69, "backward_ms": 4.47,
//                "activation_bytes": 4325376, "parameter_bytes": 50384896,
//                "boundary_bytes": 4325376,                      (optional, default activation_bytes)
//                "measurements": [{"microbatch": 8, "forward_ms": ..., "backward_ms": ...,
//                                  "activation_bytes": ..., "boundary_bytes": ...}]}],  (optional)
//    "ties": [{"layers": [0, 49], "bytes": 12582912}]}   (optional: a parameter two layers share)
//
// docs/planner.md describes every field. Errors name the file and the line (syntax) or the field.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include <loom/planner/profile.h>

namespace loom::planner {

Profile read_profile_json(const std::string& path);
Profile parse_profile_json(const std::string& text, const std::string& source);
nlohmann::json profile_to_json(const Profile& profile);
void write_profile_json(const Profile& profile, const std::string& path);

// Either format: JSON when the file starts with '{', graph.txt otherwise. `microbatch` overrides
// the profiled micro-batch size of a graph.txt file (see read_graph_profile); JSON files carry it.
Profile load_profile(const std::string& path, double microbatch = 0);

}  // namespace loom::planner
