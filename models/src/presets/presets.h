// The preset families, each in its own file; model.cpp collects them into presets().
#pragma once

#include <vector>

#include <loom/models/model.h>

namespace loom {

std::vector<Preset> mlp_presets();        // mlp
std::vector<Preset> cnn_presets();        // cnn
std::vector<Preset> gpt_presets();        // gpt
std::vector<Preset> amoebanet_presets();  // amoebanet36, amoebanet18

}  // namespace loom
