// `loom --version`'s line: git describe, build type, CUDA and oneDNN on or off, the compiled CPU ISA.
#pragma once

#include <string>

namespace loom::apps {

std::string version_text();

}  // namespace loom::apps
