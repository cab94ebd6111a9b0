// The single Catch2 v2 main shared by every loom test executable.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
