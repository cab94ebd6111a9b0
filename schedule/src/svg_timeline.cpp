// SVG picture of a timeline: a row per track, a box per compute/AR/STEP slice, labelled with its
// micro-batch, coloured by kind (later chunks lighter). Idle time is the white between boxes.
#include <loom/schedule/trace.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

#include <loom/base/error.h>

namespace loom::schedule {

namespace {

struct Rgb {
  int r, g, b;
};

const std::map<std::string, Rgb>& palette() {
  static const std::map<std::string, Rgb> colors = {
      {"forward", {66, 133, 244}},        {"backward", {52, 168, 83}},  {"backward_input", {52, 168, 83}},
      {"backward_weight", {251, 188, 5}}, {"allreduce", {234, 67, 53}}, {"step", {120, 120, 120}},
  };
  return colors;
}

std::string color_for(const TraceEvent& e) {
  Rgb c = palette().at(e.category);
  // Each further chunk mixes a third more white in.
  const double white = std::min(0.6, 0.3 * std::max(e.chunk, 0));
  auto mix = [&](int v) { return static_cast<int>(std::lround(v + (255 - v) * white)); };
  char text[8];
  std::snprintf(text, sizeof text, "#%02x%02x%02x", mix(c.r), mix(c.g), mix(c.b));
  return text;
}

std::string escape(const std::string& text) {
  std::string out;
  for (char ch : text) {
    if (ch == '<') out += "&lt;";
    else if (ch == '>') out += "&gt;";
    else if (ch == '&') out += "&amp;";
    else if (ch == '"') out += "&quot;";
    else out += ch;
  }
  return out;
}

// A tick spacing of 1, 2 or 5 × 10^k giving about `target` ticks.
double tick_spacing(double span, int target) {
  const double raw = span / target;
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  for (double factor : {1.0, 2.0, 5.0, 10.0})
    if (raw <= factor * power) return factor * power;
  return 10 * power;
}

}  // namespace

std::string svg_timeline(const Trace& trace, const std::string& title) {
  const double label_width = 150, plot_width = 1100, row_height = 30, top = title.empty() ? 20 : 44;
  const int tracks = static_cast<int>(trace.track_names.size());
  double end_ms = 0;
  for (const TraceEvent& e : trace.events) end_ms = std::max(end_ms, e.start_ms + e.duration_ms);
  if (end_ms <= 0) end_ms = 1;
  const double scale = plot_width / end_ms;
  const double axis_y = top + tracks * row_height + 6;
  const double height = axis_y + 70;

  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << label_width + plot_width + 20 << "\" height=\""
      << height << "\" font-family=\"sans-serif\" font-size=\"11\">\n";
  svg << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  if (!title.empty())
    svg << "<text x=\"" << label_width << "\" y=\"24\" font-size=\"15\">" << escape(title) << "</text>\n";
  for (int t = 0; t < tracks; ++t) {
    const double y = top + t * row_height;
    svg << "<text x=\"" << label_width - 8 << "\" y=\"" << y + row_height / 2 + 4 << "\" text-anchor=\"end\">"
        << escape(trace.track_names[t]) << "</text>\n";
    svg << "<rect x=\"" << label_width << "\" y=\"" << y + 2 << "\" width=\"" << plot_width << "\" height=\""
        << row_height - 4 << "\" fill=\"#f4f4f4\"/>\n";
  }
  for (const TraceEvent& e : trace.events) {
    if (e.duration_ms <= 0 || !palette().count(e.category)) continue;
    const double x = label_width + e.start_ms * scale, w = e.duration_ms * scale;
    const double y = top + e.track * row_height + 2;
    svg << "<rect x=\"" << x << "\" y=\"" << y << "\" width=\"" << w << "\" height=\"" << row_height - 4
        << "\" fill=\"" << color_for(e) << (e.overlapped ? "\" stroke=\"black\" stroke-width=\"1.5" : "\" stroke=\"white\" stroke-width=\"0.5")
        << "\"><title>" << escape(e.name) << (e.overlapped ? " (overlapped pair)" : "")
        << (e.virtual_stage >= 0 ? " (virtual stage " + std::to_string(e.virtual_stage) + ")" : "") << " ["
        << e.start_ms << ", " << e.start_ms + e.duration_ms << "] ms</title></rect>\n";
    const std::string label = e.microbatch >= 0 ? std::to_string(e.microbatch) : e.name;
    if (w >= 7.0 * label.size())
      svg << "<text x=\"" << x + w / 2 << "\" y=\"" << y + row_height / 2 + 2 << "\" text-anchor=\"middle\" fill=\""
          << (e.category == "backward_weight" ? "black" : "white") << "\">" << escape(label) << "</text>\n";
  }
  const double tick = tick_spacing(end_ms, 10);
  svg << "<line x1=\"" << label_width << "\" y1=\"" << axis_y << "\" x2=\"" << label_width + plot_width << "\" y2=\""
      << axis_y << "\" stroke=\"black\"/>\n";
  for (double t = 0; t <= end_ms * (1 + 1e-9); t += tick) {
    const double x = label_width + t * scale;
    svg << "<line x1=\"" << x << "\" y1=\"" << axis_y << "\" x2=\"" << x << "\" y2=\"" << axis_y + 4
        << "\" stroke=\"black\"/><text x=\"" << x << "\" y=\"" << axis_y + 16 << "\" text-anchor=\"middle\">" << t
        << "</text>\n";
  }
  svg << "<text x=\"" << label_width + plot_width << "\" y=\"" << axis_y + 30 << "\" text-anchor=\"end\">ms</text>\n";
  double legend_x = label_width;
  for (const auto& [category, rgb] : palette()) {
    if (category == "backward_input") continue;
    const std::string name = category == "backward" ? "B / BI" : category == "backward_weight" ? "BW" : category;
    TraceEvent sample;
    sample.category = category;
    svg << "<rect x=\"" << legend_x << "\" y=\"" << axis_y + 40 << "\" width=\"12\" height=\"12\" fill=\""
        << color_for(sample) << "\"/><text x=\"" << legend_x + 16 << "\" y=\"" << axis_y + 50 << "\">" << name
        << "</text>\n";
    legend_x += 110;
  }
  const bool chunks = std::any_of(trace.events.begin(), trace.events.end(), [](const TraceEvent& e) { return e.chunk > 0; });
  if (chunks)
    svg << "<text x=\"" << legend_x << "\" y=\"" << axis_y + 50 << "\">lighter: later chunks</text>\n";
  if (std::any_of(trace.events.begin(), trace.events.end(), [](const TraceEvent& e) { return e.overlapped; }))
    svg << "<text x=\"" << legend_x + (chunks ? 140 : 0) << "\" y=\"" << axis_y + 50
        << "\">black outline: overlapped F+B pair</text>\n";
  svg << "</svg>\n";
  return svg.str();
}

void write_svg_timeline(const Trace& trace, const std::string& path, const std::string& title) {
  std::ofstream out(path);
  LOOM_CHECK(static_cast<bool>(out), "cannot write SVG file '", path, "'");
  out << svg_timeline(trace, title);
  LOOM_CHECK(static_cast<bool>(out), "error while writing SVG file '", path, "'");
}

}  // namespace loom::schedule
