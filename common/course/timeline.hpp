/// @file
/// @brief Per-stage event timelines of a ring kernel: a device-side recorder and the CSV it becomes.
///
/// A lab that offers `--timeline=FILE` runs an instrumented copy of its ring kernel. One thread
/// per role stores an Event at four points of every stage's round trip:
///
/// | kind      | when                                                                   |
/// | --------- | ---------------------------------------------------------------------- |
/// | `issue`   | the producer starts the copy into a stage (or the send of a message)    |
/// | `land`    | the consumer's wait on the stage's full barrier returned: data visible |
/// | `consume` | the consumer's compute on the stage finished                           |
/// | `release` | the consumer handed the stage back (empty arrival, or the slot is free) |
///
/// Each event carries `%globaltimer` (ns, one clock for the whole GPU) and `%smid`. Only the
/// first `max_blocks` blocks and their first `max_iterations` stages are recorded, each event in
/// its own slot of a global array: no atomics, one 32-byte store per event. The host copies the
/// slots back and writes them as CSV (`block,sm,role,stage,iteration,kind,t_ns`) after `#` lines
/// naming the program, variant, size, device, toolkit and date; scripts/draw_timelines.py draws it.
///
/// Measurement plumbing: no lesson kernel records events; labs run a separate instrumented
/// instantiation, so their timed kernels stay exactly as they are.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <ctime>
#include <fstream>
#include <ostream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "course/buffer.hpp"
#include "course/cli.hpp"
#include "course/compare.hpp"
#include "course/device.hpp"

namespace course::timeline {

/// The four points of a stage's round trip (see the file's table).
enum class Kind : std::uint32_t { issue = 0, land = 1, consume = 2, release = 3 };
constexpr std::uint32_t kNumKinds = 4;

/// Who records: the thread that issues copies, or the one that waits, computes and releases.
/// The CSV names them with the chapter's words (producer/consumer, sender/receiver).
enum class Role : std::uint32_t { producer = 0, consumer = 1 };

/// Recorded blocks and stages per block, unless a lab asks for others.
constexpr std::uint32_t kDefaultBlocks = 4;
constexpr std::uint32_t kDefaultIterations = 16;

inline const char* kind_name(std::uint32_t kind) {
  switch (kind) {
    case 0: return "issue";
    case 1: return "land";
    case 2: return "consume";
    case 3: return "release";
    default: return "unknown";
  }
}

/// One recorded event. `t_ns == 0` marks a slot that was never written.
struct Event {
  unsigned long long t_ns = 0;  ///< %globaltimer, nanoseconds
  std::uint32_t block = 0;      ///< blockIdx.x
  std::uint32_t sm = 0;         ///< %smid of the recording thread
  std::uint32_t role = 0;       ///< Role
  std::uint32_t stage = 0;      ///< ring stage (buffer) of this iteration
  std::uint32_t iteration = 0;  ///< the block's n-th fill of the ring (n-th batch, tile or message)
  std::uint32_t kind = 0;       ///< Kind
};
static_assert(sizeof(Event) == 32, "one event is one 32-byte store");

/// What a kernel receives (by value): where the slots are, and which blocks and iterations to keep.
/// A default-constructed Recorder records nothing.
struct Recorder {
  Event* events = nullptr;  ///< [max_blocks][max_iterations][kNumKinds] slots
  std::uint32_t max_blocks = 0;
  std::uint32_t max_iterations = 0;

#if defined(__CUDACC__)
  /// Stores one event of this block; blocks and iterations past the limits are not recorded.
  /// The asm statements are volatile with a memory clobber: the compiler keeps the clock read
  /// where it is written, between the wait (or compute) before it and the code after it.
  __device__ void record(Kind kind, Role role, std::uint32_t stage, std::uint32_t iteration) const {
    const std::uint32_t block = blockIdx.x;
    if (events == nullptr || block >= max_blocks || iteration >= max_iterations) return;
    unsigned long long t_ns;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t_ns)::"memory");
    std::uint32_t sm;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
    const std::uint32_t k = static_cast<std::uint32_t>(kind);
    events[(std::size_t{block} * max_iterations + iteration) * kNumKinds + k] =
        Event{t_ns, block, sm, static_cast<std::uint32_t>(role), stage, iteration, k};
  }
#endif
};

/// The recorded events in a stable order: by time, then block, role, iteration and kind.
inline std::vector<Event> recorded_in_order(std::vector<Event> slots) {
  slots.erase(std::remove_if(slots.begin(), slots.end(), [](const Event& e) { return e.t_ns == 0; }), slots.end());
  std::sort(slots.begin(), slots.end(), [](const Event& a, const Event& b) {
    return std::tie(a.t_ns, a.block, a.role, a.iteration, a.kind) <
           std::tie(b.t_ns, b.block, b.role, b.iteration, b.kind);
  });
  return slots;
}

/// Device memory for the slots of `max_blocks` x `max_iterations` stages, zeroed (nothing recorded).
class Recording {
 public:
  Recording(std::uint32_t max_blocks, std::uint32_t max_iterations)
      : max_blocks_(max_blocks), max_iterations_(max_iterations),
        slots_(std::size_t{max_blocks} * max_iterations * kNumKinds) {
    if (slots_.size() > 0) slots_.fill_bytes(0);
  }
  Recorder recorder() const { return Recorder{slots_.data(), max_blocks_, max_iterations_}; }
  /// The recorded events (after the kernel has finished), in recorded_in_order()'s order.
  std::vector<Event> events() const {
    std::vector<Event> slots(slots_.size());
    if (!slots.empty()) slots_.download(slots.data());
    return recorded_in_order(std::move(slots));
  }

 private:
  std::uint32_t max_blocks_, max_iterations_;
  DeviceBuffer<Event> slots_;
};

/// What the chapters' tests require of a recording, as one line per broken rule ("" if none):
/// every event's stage is its iteration modulo @p num_stages; every recorded round trip on the
/// consumer side has land, consume and release, in this order in time; and an issue is no later
/// than the land of the same iteration in the block it is sent to (@p lands_in: its own block,
/// unless the chapter sends elsewhere; a land that was not recorded is not compared).
template <class LandsIn>
std::string round_trip_problems(const std::vector<Event>& events, std::uint32_t num_stages, LandsIn lands_in) {
  std::string problems;
  auto find = [&](std::uint32_t block, std::uint32_t iteration, Kind kind) -> const Event* {
    for (const Event& e : events) {
      if (e.block == block && e.iteration == iteration && e.kind == static_cast<std::uint32_t>(kind)) return &e;
    }
    return nullptr;
  };
  auto where = [](const Event& e) {
    return "block " + std::to_string(e.block) + " iteration " + std::to_string(e.iteration) + " " + kind_name(e.kind);
  };
  for (const Event& e : events) {
    if (e.stage != e.iteration % num_stages) problems += where(e) + ": stage " + std::to_string(e.stage) + "\n";
    if (e.kind == static_cast<std::uint32_t>(Kind::land)) {
      const Event* consume = find(e.block, e.iteration, Kind::consume);
      const Event* release = find(e.block, e.iteration, Kind::release);
      if (consume == nullptr || release == nullptr) {
        problems += where(e) + ": no consume or release recorded after it\n";
      } else if (!(e.t_ns <= consume->t_ns && consume->t_ns <= release->t_ns)) {
        problems += where(e) + ": land, consume and release are out of order in time\n";
      }
    }
    if (e.kind == static_cast<std::uint32_t>(Kind::issue)) {
      const Event* land = find(lands_in(e.block), e.iteration, Kind::land);
      if (land != nullptr && land->t_ns < e.t_ns) problems += where(e) + ": later than the land it started\n";
    }
  }
  return problems;
}

inline std::string round_trip_problems(const std::vector<Event>& events, std::uint32_t num_stages) {
  return round_trip_problems(events, num_stages, [](std::uint32_t block) { return block; });
}

/// The `#` lines above the CSV rows, and the chapter's names for the two roles.
struct Header {
  std::string program;              ///< e.g. "tma_1d_lab"
  std::string variant;              ///< the variant whose kernel was recorded
  std::size_t size_bytes = 0;       ///< --size of the run
  std::string device;               ///< course::describe(query_device())
  std::string toolkit;              ///< compiler that built the program (toolkit_line())
  std::string date;                 ///< UTC date and time of the run (utc_now())
  std::vector<std::string> notes;   ///< the chapter's lines: grid, stages, what is recorded
  std::string role_names[2] = {"producer", "consumer"};
  std::string peer;                 ///< "" (an issue lands in its own block) or "ring N" (in the right neighbour)
};

/// "2025-01-31 14:05 UTC".
inline std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm parts{};
  gmtime_r(&now, &parts);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M UTC", &parts);
  return text;
}

/// The compiler of the including translation unit, e.g. "nvcc 13.0".
inline std::string toolkit_line() {
#if defined(__CUDACC_VER_MAJOR__)
  return "nvcc " + std::to_string(__CUDACC_VER_MAJOR__) + "." + std::to_string(__CUDACC_VER_MINOR__);
#else
  return "host compiler only";
#endif
}

/// The smallest positive difference between two recorded times: the clock's visible step.
inline unsigned long long smallest_step_ns(const std::vector<Event>& events) {
  std::vector<unsigned long long> times;
  for (const Event& e : events) times.push_back(e.t_ns);
  std::sort(times.begin(), times.end());
  unsigned long long step = 0;
  for (std::size_t i = 1; i < times.size(); ++i) {
    const unsigned long long d = times[i] - times[i - 1];
    if (d > 0 && (step == 0 || d < step)) step = d;
  }
  return step;
}

/// Writes the header lines, the column line and one row per event (in the order given).
inline void write_csv(std::ostream& out, const Header& header, const std::vector<Event>& events) {
  out << "# timeline: " << header.program << ", variant " << header.variant << ", size " << header.size_bytes
      << " bytes (" << format_size(header.size_bytes) << ")\n";
  out << "# device: " << header.device << '\n';
  out << "# toolkit: " << header.toolkit << "; date: " << header.date << '\n';
  for (const std::string& note : header.notes) out << "# note: " << note << '\n';
  if (!header.peer.empty()) out << "# peer: " << header.peer << '\n';
  out << "# clock: %globaltimer in ns; smallest step between two recorded times: " << smallest_step_ns(events)
      << " ns\n";
  out << "# kinds: issue = copy (or send) started, land = wait on full returned, consume = compute done, "
         "release = stage handed back\n";
  out << "block,sm,role,stage,iteration,kind,t_ns\n";
  for (const Event& e : events) {
    out << e.block << ',' << e.sm << ',' << (e.role < 2 ? header.role_names[e.role] : std::string("unknown")) << ','
        << e.stage << ',' << e.iteration << ',' << kind_name(e.kind) << ',' << e.t_ns << '\n';
  }
}

/// The header of a run of @p program that recorded @p variant at @p size_bytes: this GPU, the
/// toolkit that built the caller, the time now. The lab adds its notes (and role names, peer).
inline Header header_of_run(const std::string& program, const std::string& variant, std::size_t size_bytes) {
  Header header;
  header.program = program;
  header.variant = variant;
  header.size_bytes = size_bytes;
  header.device = describe(query_device());
  header.toolkit = toolkit_line();
  header.date = utc_now();
  return header;
}

/// write_csv() into the file @p path; throws std::runtime_error naming the file if it cannot be written.
inline void write_csv_file(const std::string& path, const Header& header, const std::vector<Event>& events) {
  std::ofstream file(path);
  if (!file) throw std::runtime_error("--timeline: cannot open '" + shown(path) + "' for writing");
  write_csv(file, header, events);
  file.close();
  if (!file) throw std::runtime_error("--timeline: writing '" + shown(path) + "' failed");
}

/// --timeline's last step in every lab: refuses a recording whose kernel computed a wrong output
/// (@p what names it, e.g. "ring"), else writes the CSV to @p path and says so on @p log.
inline void write_checked(const std::string& path, std::ostream& log, const Comparison& result, const Header& header,
                          const std::vector<Event>& events, const std::string& what) {
  if (!result.ok()) {
    throw std::runtime_error("timeline: the recorded " + what + "'s output is wrong: " + result.summary() + "\n" +
                             result.first);
  }
  write_csv_file(path, header, events);
  log << "timeline: " << events.size() << " events written to " << path << '\n';
}

}  // namespace course::timeline
