// The preset families, each in its own file; model.cpp collects them into presets().
#pragma once

#include <vector>

#include <loom/models/model.h>

namespace loom {

std::vector<Preset> mlp_presets();        // mlp
std::vector<Preset> cnn_presets();        // cnn
std::vector<Preset> gpt_presets();        // gpt
std::vector<Preset> vgg_presets();        // vgg16, vgg19
std::vector<Preset> resnet_presets();     // resnet50
std::vector<Preset> gnmt_presets();       // gnmt8, gnmt16
std::vector<Preset> bert_presets();       // bert24, bert48
std::vector<Preset> xlnet_presets();      // xlnet36, xlnet24
std::vector<Preset> amoebanet_presets();  // amoebanet36, amoebanet18

}  // namespace loom
