// placeholder until the planner module lands
namespace loom {}
