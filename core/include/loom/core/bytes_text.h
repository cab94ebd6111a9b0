// How loom writes a number of bytes for people: in messages, progress lines and tables.
#pragma once

#include <string>

namespace loom {

// Decimal units, one decimal below 1e9 bytes and two from there on: "812 B", "4.1 KB", "445.6 MB",
// "12.30 GB" (so a figure can be checked against the byte counts in the metrics).
std::string bytes_text(double bytes);

}  // namespace loom
