// placeholder until the models module lands
namespace loom {}
