// placeholder until the schedule module lands
namespace loom {}
