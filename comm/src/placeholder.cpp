// placeholder until the comm module lands
namespace loom {}
