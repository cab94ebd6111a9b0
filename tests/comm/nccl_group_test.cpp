// NcclGroup (comm/nccl_group.h) with stand-ins for ncclGroupStart and ncclGroupEnd, on the CPU:
// a group is ended exactly once whichever way its scope is left, a throw inside it keeps its own
// message, and a failing ncclGroupEnd is an error once closed explicitly.
#include <stdexcept>

#include <catch2/catch.hpp>

#include <loom/comm/nccl_group.h>
#include <loom/base/error.h>

using loom::comm::NcclGroup;

namespace {

int starts = 0, ends = 0;
ncclResult_t start_ok() { return ++starts, ncclSuccess; }
ncclResult_t start_fails() { return ++starts, ncclInvalidUsage; }
ncclResult_t end_ok() { return ++ends, ncclSuccess; }
ncclResult_t end_fails() { return ++ends, ncclInternalError; }

void reset() { starts = ends = 0; }

}  // namespace

TEST_CASE("an NCCL group closed explicitly is ended once") {
  reset();
  {
    NcclGroup group(start_ok, end_ok);
    group.close("test group");
    CHECK_THROWS_WITH(group.close("test group"), Catch::Contains("closed twice"));
  }
  CHECK(starts == 1);
  CHECK(ends == 1);
}

TEST_CASE("a throw inside an NCCL group ends the group and keeps the first error") {
  reset();
  auto inside = [] {
    NcclGroup group(start_ok, end_fails);  // ending fails too: that error must not replace the first
    throw std::runtime_error("the send's check failed");
  };
  CHECK_THROWS_WITH(inside(), "the send's check failed");
  CHECK(starts == 1);
  CHECK(ends == 1);
}

TEST_CASE("a failing ncclGroupEnd is an error naming NCCL's reason") {
  reset();
  NcclGroup group(start_ok, end_fails);
  // NCCL's own words for ncclInternalError, and a failure a restart may get past (exit 3).
  CHECK_THROWS_WITH(group.close("test group"),
                    Catch::Contains("NCCL error") && Catch::Contains(ncclGetErrorString(ncclInternalError)));
  CHECK(ends == 1);
  reset();
  NcclGroup again(start_ok, end_fails);
  CHECK_THROWS_AS(again.close("test group"), loom::CommunicationError);
}

TEST_CASE("a failing ncclGroupStart opens no group") {
  reset();
  CHECK_THROWS_AS(NcclGroup(start_fails, end_ok), loom::Error);
  CHECK(starts == 1);
  CHECK(ends == 0);
}
