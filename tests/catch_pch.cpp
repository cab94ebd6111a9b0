// An empty test executable: it hosts the precompiled Catch2 header that every loom test target
// reuses (tests/CMakeLists.txt), compiled with an executable's flags as theirs are.
