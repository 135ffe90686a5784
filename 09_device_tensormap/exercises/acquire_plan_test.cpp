// Grades exercise 09.3: AcquireTracker is replayed on walks of a block's tensor copies like the
// lesson's and the lab's (tiles of several tensors, each through its input and output map), with
// maps written by the host, by an earlier kernel, inside the block, rewritten in place, or kept in
// constant memory or a kernel parameter. Each answer is compared with what the copy needs.
#include COURSE_EXERCISE

#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace {

const char* scope_name(Scope s) {
  switch (s) {
    case Scope::none: return "no acquire";
    case Scope::cta: return "an acquire at .cta";
    case Scope::gpu: return "an acquire at .gpu";
    case Scope::sys: return "an acquire at .sys";
  }
  return "?";
}
const char* writer_name(Writer w) {
  switch (w) {
    case Writer::host: return "the host";
    case Writer::another_gpu: return "another GPU";
    case Writer::earlier_kernel: return "an earlier kernel on this GPU";
    case Writer::another_block: return "another block of this kernel";
    case Writer::this_block: return "a warp of this block";
  }
  return "?";
}
const char* home_name(MapHome h) {
  switch (h) {
    case MapHome::kernel_parameter: return "a __grid_constant__ parameter";
    case MapHome::constant_memory: return "constant memory";
    case MapHome::global_memory: return "global memory";
  }
  return "?";
}
int width(Scope s) { return static_cast<int>(s); }
Scope narrowest(Writer w) {
  return w == Writer::this_block ? Scope::cta : (w == Writer::host || w == Writer::another_gpu) ? Scope::sys : Scope::gpu;
}

// Replays `uses` on a fresh tracker (one thread of one block); stops at the first wrong answer.
void replay(const char* walk, const std::vector<MapUse>& uses) {
  AcquireTracker tracker;
  std::map<int, int> acquired;  // slot -> version, as the copies need it
  for (std::size_t k = 0; k < uses.size(); ++k) {
    const MapUse& u = uses[k];
    Scope want = Scope::none;
    bool seen = false;
    if (u.home == MapHome::global_memory) {
      const auto found = acquired.find(u.slot);
      seen = found != acquired.end() && found->second == u.version;
      if (!seen) want = narrowest(u.writer);
      acquired[u.slot] = u.version;
    }
    const Scope got = tracker.before_copy(u);
    if (got == want) continue;
    std::ostringstream where;
    where << walk << ", copy " << k << ": its map is in " << home_name(u.home);
    if (u.home == MapHome::global_memory) {
      where << " (slot " << u.slot << ", version " << u.version << ", written by " << writer_name(u.writer) << ")";
    }
    where << "; you answer " << scope_name(got) << ": ";
    if (want == Scope::none && u.home != MapHome::global_memory) {
      FAIL() << where.str() << "a map there is fixed for the whole launch and needs no proxy fence";
    } else if (want == Scope::none) {
      FAIL() << where.str() << "this thread already acquired this version of the map, and it has not changed since";
    } else if (got == Scope::none) {
      FAIL() << where.str() << "the tensor copy would read a version of the map that this thread never acquired";
    } else if (width(got) < width(want)) {
      FAIL() << where.str() << "that scope does not hold the writer, so the acquire does not pair with its release";
    } else {
      FAIL() << where.str() << "correct, but wider than the writer needs";
    }
  }
}

// A block's walk over tiles of several tensors, as in the lesson: each tile loads through the
// tensor's input map (slot 2t) and stores through its output map (slot 2t + 1).
std::vector<MapUse> tile_walk(const std::vector<int>& tensor_of_tile, MapHome home, Writer writer, int version = 0) {
  std::vector<MapUse> uses;
  for (int t : tensor_of_tile) {
    uses.push_back({home, 2 * t, version, writer});
    uses.push_back({home, 2 * t + 1, version, writer});
  }
  return uses;
}

const std::vector<int> kTiles = {0, 0, 0, 1, 1, 2, 3, 3, 3, 3, 5, 7};  // a block's tiles only go up

TEST(HostExerciseAcquirePlan, MapsFromAnEarlierKernelOnceEach) {
  replay("device_template", tile_walk(kTiles, MapHome::global_memory, Writer::earlier_kernel));
}

TEST(HostExerciseAcquirePlan, MapsFromTheHostOnceEach) {
  replay("host_encoded", tile_walk(kTiles, MapHome::global_memory, Writer::host));
}

TEST(HostExerciseAcquirePlan, MapsThisBlockWrote) {
  replay("in_block", tile_walk(kTiles, MapHome::global_memory, Writer::this_block));
}

TEST(HostExerciseAcquirePlan, MapsOfOtherWriters) {
  replay("maps written by another block", tile_walk({0, 1, 1, 4}, MapHome::global_memory, Writer::another_block));
  if (HasFatalFailure()) return;
  replay("maps written by another GPU", tile_walk({0, 1, 1, 4}, MapHome::global_memory, Writer::another_gpu));
}

TEST(HostExerciseAcquirePlan, ConstantMemoryAndParametersNeedNone) {
  replay("constant_maps", tile_walk(kTiles, MapHome::constant_memory, Writer::host));
  if (HasFatalFailure()) return;
  replay("a map as a kernel parameter", tile_walk({0, 0, 0}, MapHome::kernel_parameter, Writer::host));
}

TEST(HostExerciseAcquirePlan, EveryBlockAcquiresForItself) {
  // Two blocks read the same maps: each block's thread acquires; the other block's acquire is not its own.
  for (int block = 0; block < 2; ++block) {
    SCOPED_TRACE(testing::Message() << "block " << block);
    replay("device_template", tile_walk({0, 0, 1}, MapHome::global_memory, Writer::earlier_kernel));
    if (HasFatalFailure()) return;
  }
}

TEST(HostExerciseAcquirePlan, AMapRewrittenInPlaceIsAcquiredAgain) {
  // One slot retargeted tensor after tensor by warp 0 of this block (as in exercise 09.4), with a
  // second map of the same block that stays unchanged.
  std::vector<MapUse> uses;
  for (int version = 0; version < 4; ++version) {
    for (int tile = 0; tile < 3; ++tile) {
      uses.push_back({MapHome::global_memory, 0, version, Writer::this_block});
      uses.push_back({MapHome::global_memory, 1, 0, Writer::earlier_kernel});
    }
  }
  replay("one slot rewritten in place", uses);
  if (HasFatalFailure()) return;
  // A slot rewritten by someone else: the new writer decides the scope.
  replay("a slot first from the host, then from this block",
         {{MapHome::global_memory, 3, 0, Writer::host}, {MapHome::global_memory, 3, 0, Writer::host},
          {MapHome::global_memory, 3, 1, Writer::this_block}, {MapHome::global_memory, 3, 2, Writer::another_block}});
}

TEST(HostExerciseAcquirePlan, MixedHomesInOneWalk) {
  replay("parameter, constant and global maps in turn",
         {{MapHome::kernel_parameter}, {MapHome::global_memory, 0, 0, Writer::earlier_kernel},
          {MapHome::constant_memory}, {MapHome::global_memory, 0, 0, Writer::earlier_kernel},
          {MapHome::global_memory, 1, 0, Writer::this_block}, {MapHome::kernel_parameter},
          {MapHome::global_memory, 1, 0, Writer::this_block}});
}

}  // namespace
