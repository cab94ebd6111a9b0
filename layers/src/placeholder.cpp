// placeholder until the layers module lands
namespace loom {}
