// Tests for 10_stas_cluster, lesson, lab and model: the message, the reference and the ring's
// tables (model); the filled/ready protocol simulated in random orders, with the broken protocols
// the model must catch; the concept figure and its program; the variant tables; what each kernel of lesson and lab compiles to (PTX
// for compute_90 and, where cuobjdump can read it, sm_90 machine code); every lesson variant and
// every lab row bit-exact on the GPU for several shapes and cluster sizes; broken protocols
// stopped by the lesson's bounded cluster-scope wait.
#include "stas_cluster_lab.cu"  // the lab, which brings the lesson and the model
#include "stas_cluster_figures.cpp"  // the concept figure's program

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "course/codegen.hpp"
#include "course/testing.hpp"

void PrintTo(const Variant& variant, std::ostream* out) { *out << variant.name; }
namespace lab {
void PrintTo(const Variant& variant, std::ostream* out) { *out << variant.name; }
}  // namespace lab

namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// ---- The message and the reference ------------------------------------------------------------

TEST(HostRing, NeighboursFormOneCycleThroughEveryBlock) {
  for (unsigned size = 1; size <= 16; ++size) {
    unsigned rank = 0, steps = 0;
    do {
      EXPECT_EQ(ring_left(ring_right(rank, size), size), rank) << "size " << size;
      rank = ring_right(rank, size);
      ++steps;
    } while (rank != 0 && steps <= size);
    EXPECT_EQ(steps, size) << "the ring of " << size << " blocks is not one cycle";
  }
}

TEST(HostRing, MessageWordsDifferBySenderIterationAndPlace) {
  std::vector<std::uint32_t> words;
  for (std::uint32_t sender = 0; sender < 16; ++sender) {
    for (std::uint32_t it = 0; it < 8; ++it) {
      for (std::uint32_t elem = 0; elem < kMessageElems; ++elem) words.push_back(message_word(sender, it, elem, 16));
    }
  }
  std::sort(words.begin(), words.end());
  EXPECT_EQ(std::adjacent_find(words.begin(), words.end()), words.end()) << "two messages share a word";
}

TEST(HostRing, DigestChangesWithAnySingleWrongWord) {
  std::vector<std::uint32_t> words(64);
  for (std::uint32_t i = 0; i < words.size(); ++i) words[i] = message_word(3, i, i, 8);
  auto digest_of = [](const std::vector<std::uint32_t>& w) {
    std::uint32_t d = kDigestStart;
    for (std::uint32_t x : w) d = digest_step(d, x);
    return d;
  };
  const std::uint32_t good = digest_of(words);
  for (std::size_t i = 0; i < words.size(); ++i) {
    for (std::uint32_t flip : {1u, 0x80000000u, 0xA5A5A5A5u}) {
      std::vector<std::uint32_t> bad = words;
      bad[i] ^= flip;
      EXPECT_NE(digest_of(bad), good) << "word " << i;
    }
  }
}

TEST(HostRing, ReferenceOfTwoBlocksByHand) {
  const RingShape shape{1, 2, 3};
  const std::vector<std::uint32_t> out = reference(shape);
  ASSERT_EQ(out.size(), 2u * kOutElemsPerBlock);
  // Block 0 receives from block 1 and block 1 from block 0; the last message is iteration 2's.
  EXPECT_EQ(out[kThreads + 5], message_word(1, 2, 5, 2));
  EXPECT_EQ(out[kOutElemsPerBlock + kThreads + 5], message_word(0, 2, 5, 2));
  // Thread 1 of block 0 reads vector 1 then vector kThreads + 1 of every message.
  std::uint32_t digest = kDigestStart;
  for (std::uint32_t it = 0; it < 3; ++it) {
    for (int e : {4, 5, 6, 7, 4 * kThreads + 4, 4 * kThreads + 5, 4 * kThreads + 6, 4 * kThreads + 7}) {
      digest = digest_step(digest, message_word(1, it, e, 2));
    }
  }
  EXPECT_EQ(out[1], digest);
}

TEST(HostRing, ReceiversOfTwoClustersStayInTheirCluster) {
  const RingShape shape{2, 4, 1};
  const std::vector<std::uint32_t> out = reference(shape);
  EXPECT_EQ(out[4 * kOutElemsPerBlock + kThreads], message_word(7, 0, 0, 8));  // block 4 hears block 7
  EXPECT_EQ(out[3 * kOutElemsPerBlock + kThreads], message_word(2, 0, 0, 8));  // block 3 hears block 2
}

TEST(HostRing, SizeMustBeWholeMessages) {
  for (const course::ChapterInfo& info : {chapter_info(), lab::chapter_info()}) {
    EXPECT_FALSE(info.size_rule(kMessageBytes)) << info.program;
    EXPECT_FALSE(info.size_rule(1000 * kMessageBytes)) << info.program;
    EXPECT_FALSE(info.size_rule(info.verify_bytes)) << info.program;
    EXPECT_FALSE(info.size_rule(info.bench_bytes)) << info.program;
    EXPECT_TRUE(info.size_rule(0)) << info.program << ": no messages, nothing to check";
    EXPECT_TRUE(info.size_rule(kMessageBytes + 16)) << info.program;
    EXPECT_TRUE(info.size_rule(4096)) << info.program;
  }
}

// ---- The ring's tables ------------------------------------------------------------------------

TEST(HostRingTables, EveryBlockSendsToOneAndHearsFromOneTheSameNumberOfMessages) {
  for (unsigned size : {1u, 2u, 4u, 8u, 16u}) {
    const std::vector<BlockTraffic> blocks = ring_traffic(size, 37);
    ASSERT_EQ(blocks.size(), size);
    std::vector<int> heard(size, 0);
    for (const BlockTraffic& b : blocks) {
      ++heard[b.sends_to];
      EXPECT_EQ(blocks[b.sends_to].receives_from, b.rank) << "ring of " << size << ", block " << b.rank;
      EXPECT_EQ(b.messages_sent, 37u);
      EXPECT_EQ(b.messages_received, 37u);
      EXPECT_EQ(b.bytes_sent, 37 * kMessageBytes);
    }
    for (unsigned r = 0; r < size; ++r) EXPECT_EQ(heard[r], 1) << "ring of " << size << ": block " << r << " hears";
  }
  EXPECT_EQ(ring_traffic(2, 1)[0].sends_to, 1u);
  EXPECT_EQ(ring_traffic(2, 1)[1].sends_to, 0u);
  EXPECT_EQ(ring_traffic(1, 1)[0].sends_to, 0u) << "a ring of one block writes into its own shared memory";
}

TEST(HostRingTables, FilledCountsOneArrivalAndTheWholeMessageInBytes) {
  for (Release release : {Release::per_block, Release::per_warp, Release::per_thread}) {
    const std::vector<PhaseCount> counts = phase_counts(release);
    ASSERT_EQ(counts.size(), 2u);
    const PhaseCount& filled = counts[0];
    EXPECT_STREQ(filled.barrier, "filled");
    EXPECT_EQ(filled.arrivals, 1) << "the receiver's own arrive.expect_tx";
    EXPECT_EQ(filled.tx_bytes, kMessageBytes);
    EXPECT_EQ(std::size_t(filled.st_async_per_phase) * 16, kMessageBytes) << "each st.async completes 16 bytes";
    EXPECT_LE(filled.tx_bytes, kMaxTxBytes) << "one phase counts less than 2^20 bytes";
    EXPECT_STREQ(counts[1].barrier, "ready");
    EXPECT_EQ(counts[1].tx_bytes, 0u) << "nothing but arrivals completes ready";
  }
}

TEST(HostRingTables, ReadyCountsOneArrivalPerReleasingBlockWarpOrThread) {
  EXPECT_EQ(phase_counts(Release::per_block)[1].arrivals, 1);
  EXPECT_EQ(phase_counts(Release::per_warp)[1].arrivals, 8);
  EXPECT_EQ(phase_counts(Release::per_thread)[1].arrivals, 256) << "the guide's count: BLOCK_SIZE";
}

TEST(HostRingTables, EachBufferCarriesEveryKthMessage) {
  for (int stages = 1; stages <= 4; ++stages) {
    for (std::uint32_t n : {0u, 1u, 2u, 5u, 32u, 1001u}) {
      std::uint32_t total = 0;
      for (int s = 0; s < stages; ++s) {
        std::uint32_t by_hand = 0;
        for (std::uint32_t m = 0; m < n; ++m) by_hand += (m % stages == static_cast<std::uint32_t>(s)) ? 1 : 0;
        EXPECT_EQ(messages_in_stage(n, stages, s), by_hand) << n << " messages, " << stages << " stages, stage " << s;
        total += messages_in_stage(n, stages, s);
      }
      EXPECT_EQ(total, n);
    }
  }
  EXPECT_EQ(messages_in_stage(32, 2, 0), 16u);
  EXPECT_EQ(messages_in_stage(5, 4, 0), 2u);
  EXPECT_EQ(messages_in_stage(5, 4, 3), 1u);
}

template <int kS>
void expect_waits_follow_iterations() {
  const std::vector<RingWait> waits = ring_waits<kS>(40);
  for (std::uint32_t it = 0; it < waits.size(); ++it) {
    EXPECT_EQ(waits[it].stage, static_cast<int>(it % kS)) << kS << " stages, iteration " << it;
    EXPECT_EQ(waits[it].filled_parity, (it / kS) & 1u) << kS << " stages, iteration " << it;
    if (it >= kS) {
      // The ready wait is for the read of the message sent kS iterations earlier into the same
      // buffer, i.e. that earlier iteration's filled parity on the receiving side.
      EXPECT_EQ(waits[it].ready_parity, waits[it - kS].filled_parity) << kS << " stages, iteration " << it;
    } else {
      EXPECT_EQ(waits[it].ready_parity, 1u) << "a fresh barrier reports parity 1 as complete";
    }
  }
}

TEST(HostRingTables, WaitsGiveStageAndParityOfEveryIteration) {
  expect_waits_follow_iterations<1>();
  expect_waits_follow_iterations<2>();
  expect_waits_follow_iterations<3>();
  expect_waits_follow_iterations<4>();
}

TEST(HostRingTables, ProgramsPrintTheModel) {
  std::ostringstream lesson, lab_model;
  chapter_info().host_model(lesson);
  lab::chapter_info().host_model(lab_model);
  EXPECT_TRUE(contains(lesson.str(), "ring of 8 blocks per cluster: 0->1 1->2 2->3 3->4 4->5 5->6 6->7 7->0"))
      << lesson.str();
  EXPECT_TRUE(contains(lesson.str(), "filled: 1 arrival + 8192 bytes from 512 st.async; ready: 1 arrival;"))
      << lesson.str();
  EXPECT_TRUE(contains(lesson.str(), "(2 buffers):  0: 0/0/1  1: 1/0/1  2: 0/1/0  3: 1/1/0  4: 0/0/1  5: 1/0/1"))
      << lesson.str();
  EXPECT_TRUE(contains(lab_model.str(), "ring of 2 blocks per cluster: 0->1 1->0")) << lab_model.str();
  EXPECT_TRUE(contains(lab_model.str(), "(1 buffer):  0: 0/0/1  1: 0/1/0  2: 0/0/1  3: 0/1/0")) << lab_model.str();
}

// ---- The protocol, simulated ------------------------------------------------------------------

TEST(HostRingProtocol, ProtocolForAReleaseCountsWhatItArrives) {
  EXPECT_EQ(protocol_for(Release::per_block, 2).release_arrivals, 1);
  EXPECT_EQ(protocol_for(Release::per_warp, 2).ready_count, kWarps);
  EXPECT_EQ(protocol_for(Release::per_thread, 3).release_arrivals, kThreads);
  EXPECT_EQ(protocol_for(Release::per_thread, 3).stages, 3);
  EXPECT_EQ(protocol_for(Release::per_thread, 3).expect_tx_bytes, static_cast<int>(kMessageBytes));
}

TEST(HostRingProtocol, LessonsOrderWithFinalClusterSyncIsSafe) {
  for (int stages : {1, 2, 3, 4}) {
    for (int ring_size : {1, 2, 3, 4, 8}) {
      EXPECT_EQ(first_problem(protocol_for(Release::per_block, stages), ring_size), "")
          << stages << " stages, ring of " << ring_size;
    }
  }
}

TEST(HostRingProtocol, ReleasePerWarpWithItsCountIsSafe) {
  for (int ring_size : {2, 8}) EXPECT_EQ(first_problem(protocol_for(Release::per_warp, 2), ring_size, 200), "");
}

TEST(HostRingProtocol, LessonsOrderWithoutFinalSyncLetsAnArrivalReachAnExitedBlock) {
  for (int stages : {1, 2}) {
    Protocol p = protocol_for(Release::per_block, stages);
    p.final_cluster_sync = false;
    EXPECT_TRUE(contains(first_problem(p, 8), "remote arrive from block")) << stages << " stages";
  }
}

TEST(HostRingProtocol, GuidesOrderWithOneBufferIsSafeWithoutFinalSync) {
  Protocol p = protocol_for(Release::per_block, 1);
  p.ready_wait_first = false;
  p.final_cluster_sync = false;
  EXPECT_EQ(first_problem(p, 8), "");
}

TEST(HostRingProtocol, WithoutTheReadyWaitAMessageIsOverwritten) {
  Protocol p;
  p.skip_ready_wait = true;
  EXPECT_TRUE(contains(first_problem(p, 8), "overwritten before it was read"));
}

TEST(HostRingProtocol, WithoutTheReadyArrivalTheRingDeadlocks) {
  Protocol p;
  p.release_arrivals = 0;
  EXPECT_TRUE(contains(first_problem(p, 8), "deadlock"));
}

TEST(HostRingProtocol, ExpectingMoreBytesThanSentDeadlocks) {
  Protocol p;
  p.expect_tx_bytes = static_cast<int>(kMessageBytes) + 16;  // Sm90_StasClusterBroken runs this one
  EXPECT_TRUE(contains(first_problem(p, 8), "deadlock: block"));
}

TEST(HostRingProtocol, ExpectingFewerBytesThanSentReadsTooEarly) {
  Protocol p;
  p.expect_tx_bytes = static_cast<int>(kMessageBytes) / p.chunks * (p.chunks - 1);
  const std::string problem = first_problem(p, 8);
  EXPECT_TRUE(contains(problem, "before it landed") || contains(problem, "overwritten") || contains(problem, "deadlock"))
      << problem;
}

// Eight arrivals on a count of one complete eight phases per message: the parity ends where it
// started, so the sender waits forever, or passes on a parity seen halfway and overwrites.
TEST(HostRingProtocol, ArrivalsPerWarpOnACountOfOneBreakTheRing) {
  Protocol p = protocol_for(Release::per_warp, 2);
  p.ready_count = 1;
  const std::string problem = first_problem(p, 8);
  EXPECT_TRUE(contains(problem, "deadlock") || contains(problem, "overwritten before it was read")) << problem;
}

TEST(HostRingProtocol, OneArrivalPerBlockOnACountOfEightDeadlocks) {
  Protocol p = protocol_for(Release::per_block, 2);
  p.ready_count = kWarps;
  EXPECT_TRUE(contains(first_problem(p, 8), "deadlock"));
}

// ---- The concept figure, and the program that draws it ---------------------------------------

TEST(HostFigures, CommittedRingSvgIsWhatTheModelDraws) {
  EXPECT_TRUE(course::figures_are_fresh(kFiguresProgram, chapter_figures(),
                                        std::filesystem::path(__FILE__).parent_path() / "figures"));
}

TEST(HostFigures, TheRingShowsWhoWritesWhomEachBarrierAndEveryWait) {
  const std::string svg = ring_svg<2>(6, 2);
  EXPECT_TRUE(contains(svg, "viewBox=\"0 0 720 ")) << "at most 720 wide";
  EXPECT_TRUE(contains(svg, "width=\"100%\""));
  EXPECT_TRUE(contains(svg, "<rect x=\"0\" y=\"0\" width=\"720\" ")) << "an opaque background";
  EXPECT_TRUE(contains(svg, "rank 7 writes into rank 0"));
  EXPECT_TRUE(contains(svg, "rank 2 into rank 3"));
  EXPECT_EQ(course::count_matches(svg, "st\\.async: 512 x 16 B"), 2) << "one per stage";
  EXPECT_EQ(course::count_matches(svg, "own arrive\\.expect_tx\\(8192\\)"), 2) << svg;
  EXPECT_TRUE(contains(svg, "stage 1: iterations 1, 3, 5, ..."));
  // The first use of each buffer passes its ready wait; later ones wait for the read two earlier.
  EXPECT_TRUE(contains(svg, "ready_bar[1], parity 1: fresh, passes"));
  EXPECT_TRUE(contains(svg, "ready_bar[0], parity 0: message 0 read"));
  EXPECT_TRUE(contains(svg, "ready_bar[1], parity 1: message 3 read"));
  EXPECT_TRUE(contains(svg, "filled_bar[1], parity 1: message 3<"));
  // Seven arrows along the ring (and the way back), per stage st.async, complete-tx and the
  // dashed remote arrive, two in the legend.
  EXPECT_EQ(course::count_matches(svg, "<line [^>]*marker-end"), 7 + 2 * 3 + 2);
  EXPECT_EQ(course::count_matches(svg, "<line [^>]*stroke-dasharray"), 2 + 1);
  EXPECT_EQ(course::count_matches(svg, "<path d=\"M[^>]*marker-end"), 1);
  const std::regex font_size("font-size=\"([0-9]+)\"");
  for (auto m = std::sregex_iterator(svg.begin(), svg.end(), font_size); m != std::sregex_iterator();
       ++m) {
    EXPECT_GE(std::stoi((*m)[1]), 12) << "text readable at 390 px";
  }
}

TEST(HostFigures, TheDrawingFollowsTheModelsStagesAndPair) {
  const std::string svg = ring_svg<3>(6, 7);
  EXPECT_TRUE(contains(svg, "3 stages per block"));
  EXPECT_TRUE(contains(svg, "rank 7 into rank 0"));
  EXPECT_TRUE(contains(svg, "stage 2: iterations 2, 5, ..."));
  EXPECT_TRUE(contains(svg, "ready_bar[2], parity 1: fresh, passes"));
  EXPECT_TRUE(contains(svg, "ready_bar[0], parity 0: message 0 read"));
  EXPECT_TRUE(contains(svg, "filled_bar[0], parity 1: message 3<"));
  EXPECT_EQ(course::count_matches(svg, "<line [^>]*stroke-dasharray"), 3 + 1);
}

TEST(HostFigures, TheProgramWritesTheFigureAndRefusesBadArguments) {
  EXPECT_TRUE(course::figures_program_works(kFiguresProgram, chapter_figures()));
}

// ---- The variant tables -----------------------------------------------------------------------

template <class Table>
std::vector<std::string> unique_names(const Table& table) {
  std::vector<std::string> names;
  for (const auto& v : table) {
    EXPECT_EQ(std::find(names.begin(), names.end(), v.name), names.end()) << v.name << " twice";
    names.push_back(v.name);
  }
  return names;
}

TEST(HostVariants, LabRowsNameTheirClusterSizeAndTheLabTakesTheLessonsCommandLine) {
  for (const lab::Variant& v : lab::kVariants) {
    const std::string name = v.name;
    if (name == "dsmem_stores") {
      EXPECT_EQ(v.cluster_blocks, unsigned(kClusterBlocks)) << "__cluster_dims__(8, 1, 1)";
      continue;
    }
    EXPECT_EQ(name.substr(name.find("_c") + 2), std::to_string(v.cluster_blocks)) << name;
  }
  const course::ChapterInfo lesson = chapter_info(), lab_info = lab::chapter_info();
  EXPECT_STREQ(lab_info.program, "stas_cluster_lab");
  EXPECT_EQ(lab_info.verify_bytes, lesson.verify_bytes);
  EXPECT_EQ(lab_info.bench_bytes, lesson.bench_bytes);
  EXPECT_EQ(lab_info.requirement.major, 9);
}

TEST(HostVariants, TheLabRecordsTheLessonsRingAsItsTimeline) {
  const course::ChapterInfo lesson = chapter_info(), lab_info = lab::chapter_info();
  EXPECT_FALSE(lesson.timeline) << "a lesson records no timeline";
  ASSERT_TRUE(lab_info.timeline);
  EXPECT_EQ(lab_info.timeline_variant, "stas_ring") << "the lesson's ring: 2 buffers in clusters of 8";
  EXPECT_EQ(std::count_if(std::begin(kVariants), std::end(kVariants),
                          [&](const Variant& v) { return lab_info.timeline_variant == v.name; }),
            1);
  const std::size_t timeline_bytes = lab_info.timeline_bytes != 0 ? lab_info.timeline_bytes : lab_info.verify_bytes;
  EXPECT_FALSE(lab_info.size_rule(timeline_bytes));
  EXPECT_GE(timeline_bytes / kMessageBytes, course::timeline::kDefaultIterations)
      << "every block sends at least the recorded number of messages";
  EXPECT_GE(std::uint32_t{kClusterBlocks}, course::timeline::kDefaultBlocks) << "the recorded blocks share one ring";
}

TEST(HostVariants, EveryLabRowRunsTheLessonsGridAndBytes) {
  const unsigned num_blocks = 124 * kClusterBlocks;  // as on the H100
  for (const lab::Variant& v : lab::kVariants) {
    const RingShape shape = lab::row_shape(v, num_blocks, 32);
    EXPECT_EQ(shape.num_blocks(), num_blocks) << v.name;
    EXPECT_EQ(shape.dsmem_bytes(), std::size_t{num_blocks} * 32 * kMessageBytes) << v.name;
  }
}

// ---- What the compiler emits (PTX generated by the build; SASS of this executable) ------------

class HostCodegen : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    lesson_ = course::chapter_ptx("stas_cluster", "90");
    lab_ = course::chapter_ptx("stas_cluster_lab", "90");
  }
  static std::string kernel(const std::string& ptx, const std::string& part, const char* program) {
    const std::string body = course::ptx_kernel_body(ptx, part);
    EXPECT_FALSE(body.empty()) << "no kernel " << part << " in " << program << ".compute_90.ptx";
    return body;
  }
  static std::string lesson(const std::string& part) { return kernel(lesson_, part, "stas_cluster"); }
  static std::string lab(const std::string& part) { return kernel(lab_, part, "stas_cluster_lab"); }
  // Every ring kernel of lesson and lab, by name.
  static std::vector<std::pair<std::string, std::string>> rings() {
    std::vector<std::pair<std::string, std::string>> all = {
        {"stas_ring", lesson(kRing2)},
        {"stas_ring_1stage", lesson(kRing1)},
        {"stas_ring_any_cluster_kernel", lesson(kAnyCluster)}};
    for (int s = 1; s <= 2; ++s) all.push_back({"lab sweep, " + std::to_string(s) + " stages", lab(sweep(s))});
    return all;
  }
  static std::string sweep(int stages) { return "3lab28stas_ring_any_cluster_kernelILi" + std::to_string(stages) + "EE"; }
  static inline const char* const kRing2 = "_Z16stas_ring_kernelILi2EE";
  static inline const char* const kRing1 = "_Z16stas_ring_kernelILi1EE";
  static inline const char* const kAnyCluster = "_Z28stas_ring_any_cluster_kernelPjj";
  static inline const char* const kStores = "3lab19dsmem_stores_kernelEPjj";
  static inline const char* const kRecorded = "3lab25recorded_stas_ring_kernelEPjj";
  static inline const char* const kPair = "_Z16stas_pair_kernelPj";
  static inline std::string lesson_, lab_;
};

// st.async (v4.b32, 16 bytes) into the neighbour, completing bytes on the neighbour's barrier;
// mapa for every mapped address; the remote arrive with release at cluster scope; the local
// expect-tx at CTA scope; the inits published to the cluster; elect.sync from invoke_one; the
// cluster barriers; no plain 16-byte store into shared memory.
TEST_F(HostCodegen, RingsStoreWithStAsyncAndSignalAcrossBlocks) {
  for (const auto& [name, k] : rings()) {
    EXPECT_GE(course::count_matches(k, R"(st\.async\.weak\.shared::cluster\.mbarrier::complete_tx::bytes\.v4\.b32)"), 1)
        << name;
    EXPECT_GE(course::count_matches(k, R"(mapa\.u64)"), 3) << name << ": message, filled and ready mapped";
    EXPECT_TRUE(contains(k, "mbarrier.arrive.release.cluster.shared::cluster.b64")) << name << ": the remote arrive";
    EXPECT_TRUE(contains(k, "mbarrier.arrive.expect_tx.release.cta.shared::cta.b64")) << name;
    EXPECT_TRUE(contains(k, "fence.mbarrier_init.release.cluster")) << name;
    EXPECT_TRUE(contains(k, "elect.sync")) << name << ": invoke_one elects a lane";
    EXPECT_TRUE(contains(k, "barrier.cluster.arrive")) << name;
    EXPECT_TRUE(contains(k, "barrier.cluster.wait")) << name;
    EXPECT_FALSE(contains(k, "\tst.v4.u32")) << name << " should not store into shared memory with plain stores";
  }
}

// Every wait acquires at cluster scope and is bounded; none is the guide's CTA-scope wait.
TEST_F(HostCodegen, EveryRingWaitAcquiresAtClusterScopeAndIsBounded) {
  for (const auto& [name, k] : rings()) {
    EXPECT_GE(course::count_matches(k, R"(mbarrier\.try_wait\.parity\.acquire\.cluster\.shared::cta\.b64)"), 2)
        << name << ": the ready and the filled wait";
    EXPECT_EQ(course::count_matches(k, R"(mbarrier\.try_wait\.parity\.shared::cta\.b64)"), 0)
        << name << ": a wait with the default .acquire.cta";
    EXPECT_EQ(course::count_matches(k, R"(mbarrier\.try_wait\.parity\.acquire\.cta)"), 0) << name;
    EXPECT_TRUE(contains(k, "%globaltimer")) << name << ": a wait without a time limit";
  }
}

TEST_F(HostCodegen, TheRingReleasesOncePerBlockAfterTheBlockBarrier) {
  for (const char* part : {kRing2, kRing1, kAnyCluster}) {
    EXPECT_TRUE(contains(lesson(part), "bar.sync")) << part << ": __syncthreads before the one remote arrival";
  }
}

// The minimal kernel: st.async v4.b32 completing on the other block's barrier, the cluster-scope
// init fence and acquire, two cluster barriers, and the plain (unbounded) wait.
TEST_F(HostCodegen, MinimalKernelUsesTheStandardCallsAndThePlainWait) {
  const std::string k = lesson(kPair);
  EXPECT_GE(course::count_matches(k, R"(st\.async\.weak\.shared::cluster\.mbarrier::complete_tx::bytes\.v4\.b32)"), 1);
  EXPECT_EQ(course::count_matches(k, R"(mapa\.u64)"), 2) << "the inbox and the barrier";
  EXPECT_TRUE(contains(k, "fence.mbarrier_init.release.cluster"));
  EXPECT_TRUE(contains(k, "mbarrier.arrive.expect_tx.release.cta"));
  EXPECT_GE(course::count_matches(k, R"(mbarrier\.try_wait\.parity\.acquire\.cluster)"), 1);
  EXPECT_EQ(course::count_matches(k, R"(mbarrier\.try_wait\.parity\.acquire\.cta)"), 0);
  EXPECT_EQ(course::count_matches(k, "barrier.cluster.wait"), 2) << "after the init and before exit";
  EXPECT_FALSE(contains(k, "%globaltimer")) << "the minimal kernel's wait is the plain one";
  EXPECT_TRUE(contains(k, ".reqnctapercluster 2, 1, 1"));
}

TEST_F(HostCodegen, PlainStoreVariantUsesGenericStoresAndClusterBarriers) {
  const std::string k = lab(kStores);
  EXPECT_TRUE(contains(k, "mapa.u64"));
  EXPECT_GE(course::count_matches(k, R"(\tst\.v4\.u32)"), 1) << "16-byte stores through the mapped (generic) address";
  EXPECT_TRUE(contains(k, "barrier.cluster.arrive"));
  EXPECT_TRUE(contains(k, "barrier.cluster.wait"));
  EXPECT_FALSE(contains(k, "st.async"));
  EXPECT_FALSE(contains(k, "mbarrier"));
  EXPECT_FALSE(contains(k, "elect.sync"));
}

// The two launch styles of the lesson run the same instructions (only the cluster directives
// differ), and the lab's two-buffer sweep kernel is the lesson's stas_ring_launch_ex.
TEST_F(HostCodegen, LaunchStylesAndTheLabsTwoBufferSweepRunTheLessonsCode) {
  const std::vector<std::string> any_cluster = course::ptx_instructions(lesson(kAnyCluster));
  EXPECT_GT(any_cluster.size(), 100u) << "too few instructions found";
  EXPECT_EQ(course::ptx_instructions(lesson(kRing2)), any_cluster);
  EXPECT_EQ(course::ptx_instructions(lab(sweep(2))), any_cluster);
  EXPECT_NE(course::ptx_instructions(lesson(kRing1)), any_cluster) << "one buffer: another ring";
  EXPECT_TRUE(contains(lesson(kRing2), ".reqnctapercluster 8, 1, 1")) << "__cluster_dims__(8, 1, 1)";
  EXPECT_TRUE(contains(lesson(kRing2), ".explicitcluster"));
  EXPECT_FALSE(contains(lesson(kAnyCluster), ".reqnctapercluster")) << "the launch chooses the size";
  EXPECT_FALSE(contains(lab(sweep(1)), ".reqnctapercluster"));
}

// The timeline's kernel calls the lesson's steps in clusters of 8: every instruction of the
// protocol appears in it as often as in stas_ring_kernel<2>; the recorder adds clock and SM reads.
TEST_F(HostCodegen, TheRecordedRingRunsTheLessonsProtocol) {
  const std::string ring = lesson(kRing2);
  const std::string recorded = lab(kRecorded);
  for (const char* protocol :
       {R"(st\.async\.)", R"(mapa\.u64)", R"(mbarrier\.init)", R"(fence\.mbarrier_init)",
        R"(mbarrier\.arrive\.expect_tx)", R"(mbarrier\.arrive\.release\.cluster)",
        R"(mbarrier\.try_wait\.parity)", R"(barrier\.cluster\.arrive)", R"(barrier\.cluster\.wait)",
        R"(\bbar\.sync)", R"(elect\.sync)"}) {
    EXPECT_GE(course::count_matches(ring, protocol), 1) << protocol;
    EXPECT_EQ(course::count_matches(recorded, protocol), course::count_matches(ring, protocol))
        << protocol;
  }
  EXPECT_TRUE(contains(recorded, ".reqnctapercluster 8, 1, 1"));
  EXPECT_TRUE(contains(recorded, "%smid")) << "a recording point";
  EXPECT_FALSE(contains(ring, "%smid")) << "a recording point in the lesson's ring";
}

// The machine code on 9.0 (this executable's sm_90 code; skipped where cuobjdump or that code is
// missing). STAS.128 is st.async v4.b32; SYNCS.ARRIVE.TRANS64.RED an arrive on an mbarrier of
// another block; SYNCS.PHASECHK.TRANS64 the phase waits; UCGABAR_ARV / UCGABAR_WAIT the cluster
// barrier; ELECT from invoke_one; ST.E.128 a 16-byte store through a generic address.
TEST_F(HostCodegen, MachineCodeOnHopperShowsStasRemoteArrivesAndClusterBarriers) {
  COURSE_SASS_OR_SKIP(sass, "sm_90");
  const auto sass_of = [&](const std::string& part) {
    const std::string body = course::sass_kernel_body(sass, part);
    EXPECT_FALSE(body.empty()) << "no kernel " << part << " in the sm_90 machine code";
    return body;
  };
  std::vector<std::string> rings = {kRing2, kRing1, kAnyCluster};
  for (int s = 1; s <= 2; ++s) rings.push_back(sweep(s));
  for (const std::string& part : rings) {
    const std::string k = sass_of(part);
    EXPECT_GE(course::count_matches(k, R"(STAS\.128)"), 1) << part;
    EXPECT_GE(course::count_matches(k, R"(SYNCS\.ARRIVE\.TRANS64\.RED)"), 1) << part;
    EXPECT_GE(course::count_matches(k, R"(SYNCS\.PHASECHK\.TRANS64)"), 1) << part;
    EXPECT_GE(course::count_matches(k, "UCGABAR_ARV"), 1) << part;
    EXPECT_GE(course::count_matches(k, "UCGABAR_WAIT"), 1) << part;
    EXPECT_GE(course::count_matches(k, "ELECT"), 1) << part;
  }
  const std::string stores = sass_of(kStores);
  EXPECT_GE(course::count_matches(stores, R"(ST\.E\.128)"), 1);
  EXPECT_GE(course::count_matches(stores, "UCGABAR_ARV"), 1);
  EXPECT_GE(course::count_matches(stores, "UCGABAR_WAIT"), 1);
  EXPECT_EQ(course::count_matches(stores, "STAS"), 0);
}

// ---- On the GPU: every lesson variant and every lab row -------------------------------------

class Sm90_StasCluster : public course::GpuTest, public ::testing::WithParamInterface<Variant> {
 protected:
  Sm90_StasCluster() : GpuTest(chapter_info().requirement) {}
  course::Comparison run_shape(const RingShape& shape) {
    Problem problem = problem_for(GetParam().launch, shape);
    return verify(GetParam().launch, problem);
  }
};

TEST_P(Sm90_StasCluster, OneClusterOneMessage) {
  const course::Comparison result = run_shape({1, kClusterBlocks, 1});
  EXPECT_TRUE(result.ok()) << result.summary() << '\n' << result.first;
}

TEST_P(Sm90_StasCluster, OneClusterManyMessages) {
  const course::Comparison result = run_shape({1, kClusterBlocks, 1001});
  EXPECT_TRUE(result.ok()) << result.summary() << '\n' << result.first;
}

TEST_P(Sm90_StasCluster, MoreClustersThanFitAtOnce) {
  const ClusterLimits limits = query_cluster_limits();
  const course::Comparison result = run_shape({2u * limits.resident_clusters + 3u, kClusterBlocks, 5});
  EXPECT_TRUE(result.ok()) << result.summary() << '\n' << result.first;
}

TEST_P(Sm90_StasCluster, RepeatedRunsGiveTheSameBits) {
  Problem problem = problem_for(GetParam().launch, {4, kClusterBlocks, 37});
  for (int run = 0; run < 3; ++run) {
    const course::Comparison result = verify(GetParam().launch, problem);
    ASSERT_TRUE(result.ok()) << "run " << run << ": " << result.summary() << '\n' << result.first;
    ASSERT_EQ(result.untouched, 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(Lesson, Sm90_StasCluster, ::testing::ValuesIn(kVariants),
                         [](const auto& info) { return std::string(info.param.name); });

// A lab row at its own cluster size.
class Sm90_StasClusterLab : public course::GpuTest, public ::testing::WithParamInterface<lab::Variant> {
 protected:
  Sm90_StasClusterLab() : GpuTest(lab::chapter_info().requirement) {}
  course::Comparison run_clusters(unsigned num_clusters, std::uint32_t num_iterations) {
    Problem problem({num_clusters, GetParam().cluster_blocks, num_iterations});
    return verify(GetParam().launch, problem);
  }
};

TEST_P(Sm90_StasClusterLab, OneClusterOneMessage) {
  const course::Comparison result = run_clusters(1, 1);
  EXPECT_TRUE(result.ok()) << result.summary() << '\n' << result.first;
}

TEST_P(Sm90_StasClusterLab, OneClusterManyMessages) {
  const course::Comparison result = run_clusters(1, 1001);
  EXPECT_TRUE(result.ok()) << result.summary() << '\n' << result.first;
}

TEST_P(Sm90_StasClusterLab, TheLabsGridAndMoreThanFitsAtOnce) {
  const ClusterLimits limits = query_cluster_limits();
  const unsigned resident_blocks = static_cast<unsigned>(limits.resident_clusters) * kClusterBlocks;
  const RingShape lab_grid = lab::row_shape(GetParam(), resident_blocks, 7);
  const course::Comparison as_in_the_lab = run_clusters(lab_grid.num_clusters, 7);
  EXPECT_TRUE(as_in_the_lab.ok()) << as_in_the_lab.summary() << '\n' << as_in_the_lab.first;
  const course::Comparison more = run_clusters(2 * lab_grid.num_clusters + 3, 5);
  EXPECT_TRUE(more.ok()) << more.summary() << '\n' << more.first;
}

TEST_P(Sm90_StasClusterLab, RepeatedRunsGiveTheSameBits) {
  Problem problem({4, GetParam().cluster_blocks, 37});
  for (int run = 0; run < 3; ++run) {
    const course::Comparison result = verify(GetParam().launch, problem);
    ASSERT_TRUE(result.ok()) << "run " << run << ": " << result.summary() << '\n' << result.first;
    ASSERT_EQ(result.untouched, 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(Lab, Sm90_StasClusterLab, ::testing::ValuesIn(lab::kVariants),
                         [](const auto& info) { return std::string(info.param.name); });

// The lesson's kernel without __cluster_dims__, launched with cudaLaunchKernelEx at several sizes.
class Sm90_StasClusterSize : public course::GpuTest, public ::testing::WithParamInterface<unsigned> {
 protected:
  Sm90_StasClusterSize() : GpuTest(chapter_info().requirement) {}
};

TEST_P(Sm90_StasClusterSize, RingOfThisManyBlocks) {
  Problem problem({3, GetParam(), 50});
  const course::Comparison result = verify(&launch_ex<stas_ring_any_cluster_kernel>, problem);
  EXPECT_TRUE(result.ok()) << result.summary() << '\n' << result.first;
}

INSTANTIATE_TEST_SUITE_P(Sizes, Sm90_StasClusterSize, ::testing::Values(1u, 2u, 4u, 8u));

class Sm90_StasClusterLimits : public course::GpuTest {
 protected:
  Sm90_StasClusterLimits() : GpuTest(chapter_info().requirement) {}
};

TEST_F(Sm90_StasClusterLimits, QueriesAreConsistent) {
  const ClusterLimits limits = query_cluster_limits();
  EXPECT_GE(limits.max_portable, 1);
  EXPECT_LE(limits.max_portable, kClusterBlocks) << "8 is the portable maximum";
  EXPECT_GE(limits.max_nonportable, limits.max_portable);
  EXPECT_GE(limits.resident_clusters, 1);
  // The non-portable permission is a kernel attribute that outlives the call (and a test that sets
  // it, such as LargestReportedClusterRunsEveryRing): asked again, after it was granted, the
  // portable maximum must not change.
  COURSE_CHECK(cudaFuncSetAttribute(stas_ring_any_cluster_kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  const ClusterLimits again = query_cluster_limits();
  EXPECT_EQ(again.max_portable, limits.max_portable) << "the query must not depend on what ran before it";
  EXPECT_EQ(again.max_nonportable, limits.max_nonportable);
}

// The largest cluster the query reports for each kernel (16 on the H100), for the lesson's kernel
// and for every buffer count of the lab's.
using RingKernel = void (*)(std::uint32_t*, std::uint32_t);
unsigned largest_cluster(RingKernel kernel) {
  COURSE_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(kClusterBlocks);
  config.blockDim = dim3(kThreads);
  int size = 0;
  COURSE_CHECK(cudaOccupancyMaxPotentialClusterSize(&size, kernel, &config));
  return static_cast<unsigned>(size);
}

TEST_F(Sm90_StasClusterLimits, LargestReportedClusterRunsEveryRing) {
  struct Ring {
    const char* name;
    RingKernel kernel;
    RingLaunch launch;
  };
  const Ring rings[] = {
      {"lesson", stas_ring_any_cluster_kernel, &launch_ex<stas_ring_any_cluster_kernel>},
      {"lab, 1 buffer", lab::stas_ring_any_cluster_kernel<1>, lab::sweep<1>},
      {"lab, 2 buffers", lab::stas_ring_any_cluster_kernel<2>, lab::sweep<2>},
      {"lab, 3 buffers", lab::stas_ring_any_cluster_kernel<3>, lab::sweep<3>},
      {"lab, 4 buffers", lab::stas_ring_any_cluster_kernel<4>, lab::sweep<4>}};
  for (const Ring& ring : rings) {
    const unsigned size = largest_cluster(ring.kernel);
    ASSERT_GE(size, 1u) << ring.name;
    Problem problem({2, size, 20});
    const course::Comparison result = verify(ring.launch, problem);
    EXPECT_TRUE(result.ok()) << ring.name << ", ring of " << size << ": " << result.summary() << '\n' << result.first;
  }
}

// ---- Broken protocols, stopped by the lesson's bounded cluster-scope wait -----------------------

// Announces 16 bytes more than the left neighbour sends: "filled" never completes.
__global__ void __cluster_dims__(2, 1, 1) expect_too_many_bytes_kernel(std::uint32_t* gmem_out) {
  __shared__ alignas(16) std::uint32_t smem_message[kMessageElems];
  __shared__ std::uint64_t filled_bar;
  cg::cluster_group cluster = cg::this_cluster();
  if (threadIdx.x == 0) {
    ptx::mbarrier_init(&filled_bar, 1);
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);
  }
  cluster.sync();
  const unsigned right = ring_right(cluster.block_rank(), cluster.num_blocks());
  std::uint32_t* dsmem_right_message = cluster.map_shared_rank(smem_message, right);
  std::uint64_t* dsmem_right_filled = cluster.map_shared_rank(&filled_bar, right);
  for (int k = 0; k < kVecsPerThread; ++k) {
    std::uint32_t words[kVecElems] = {1, 2, 3, 4};
    ptx::st_async(dsmem_right_message + message_index(threadIdx.x, k, 0), words, dsmem_right_filled);
  }
  if (threadIdx.x == 0) {
    (void)ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &filled_bar,
                                         std::uint32_t{kMessageBytes + 16});  // BROKEN: 16 bytes never come
  }
  wait_parity_cluster(&filled_bar, 0, {"filled", 0, 0});
  gmem_out[blockIdx.x * kThreads + threadIdx.x] = smem_message[threadIdx.x];
  cluster.sync();
}

// One buffer, and the receiver never tells the sender it has read the message: the sender's
// second "ready" wait never returns.
__global__ void __cluster_dims__(2, 1, 1) never_ready_kernel(std::uint32_t* gmem_out) {
  __shared__ alignas(16) std::uint32_t smem_message[kMessageElems];
  __shared__ std::uint64_t filled_bar, ready_bar;
  cg::cluster_group cluster = cg::this_cluster();
  if (threadIdx.x == 0) {
    ptx::mbarrier_init(&filled_bar, 1);
    ptx::mbarrier_init(&ready_bar, 1);
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);
  }
  cluster.sync();
  const unsigned right = ring_right(cluster.block_rank(), cluster.num_blocks());
  std::uint32_t* dsmem_right_message = cluster.map_shared_rank(smem_message, right);
  std::uint64_t* dsmem_right_filled = cluster.map_shared_rank(&filled_bar, right);
  std::uint32_t sum = 0;
  for (std::uint32_t phase = 0; phase < 2; ++phase) {
    wait_parity_cluster(&ready_bar, phase ^ 1u, {"ready", 0, phase ^ 1u});
    for (int k = 0; k < kVecsPerThread; ++k) {
      std::uint32_t words[kVecElems] = {phase, 2, 3, 4};
      ptx::st_async(dsmem_right_message + message_index(threadIdx.x, k, 0), words, dsmem_right_filled);
    }
    if (threadIdx.x == 0) {
      (void)ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &filled_bar,
                                           std::uint32_t{kMessageBytes});
    }
    wait_parity_cluster(&filled_bar, phase, {"filled", 0, phase});
    sum += smem_message[threadIdx.x];
    // BROKEN: no arrival on the left neighbour's ready barrier
  }
  gmem_out[blockIdx.x * kThreads + threadIdx.x] = sum;
  cluster.sync();
}

class Sm90_StasClusterBroken : public course::GpuTest {
 protected:
  Sm90_StasClusterBroken() : GpuTest(chapter_info().requirement) {}
};

// Launch without synchronising: the death test's child synchronises and reports.
void launch_broken(void (*kernel)(std::uint32_t*), std::uint32_t* gmem_out) {
  kernel<<<2, kThreads>>>(gmem_out);
  COURSE_CHECK_LAUNCH();
}

TEST_F(Sm90_StasClusterBroken, TooManyExpectedBytesIsDiagnosed) {
  course::DeviceBuffer<std::uint32_t> out(2 * kThreads);
  COURSE_EXPECT_DIAGNOSED_HANG(launch_broken(expect_too_many_bytes_kernel, out.data()),
                               "bounded wait: gave up .*barrier 'filled', stage 0, phase 0", 30.0);
}

TEST_F(Sm90_StasClusterBroken, MissingReadyArrivalIsDiagnosed) {
  course::DeviceBuffer<std::uint32_t> out(2 * kThreads);
  COURSE_EXPECT_DIAGNOSED_HANG(launch_broken(never_ready_kernel, out.data()),
                               "bounded wait: gave up .*barrier 'ready', stage 0, phase 0", 30.0);
}


// ---- The timeline (--timeline): the recorded ring is right, and so are its events -----------

class Sm90_StasClusterTimeline : public course::GpuTest {
 protected:
  Sm90_StasClusterTimeline() : GpuTest(chapter_info().requirement) {}
};

TEST_F(Sm90_StasClusterTimeline, EveryMessageLandsInTheRightNeighbourAfterItWasSentAndBeforeItsBufferIsReused) {
  using course::timeline::Event;
  using course::timeline::Kind;
  Problem problem({2, kClusterBlocks, 20});
  const lab::TimelineRun run = lab::record_stas_ring(problem, 4, 16);
  ASSERT_TRUE(run.result.ok()) << run.result.summary() << '\n' << run.result.first;
  const auto right = [](std::uint32_t block) {
    return block - block % kClusterBlocks + ring_right(block % kClusterBlocks, kClusterBlocks);
  };
  EXPECT_EQ(course::timeline::round_trip_problems(run.events, lab::kTimelineStages, right), "");
  EXPECT_EQ(run.events.size(), 4u * 16 * 4) << "every block, message and kind";
  auto find = [&](std::uint32_t block, std::uint32_t iteration, Kind kind) -> const Event* {
    for (const Event& e : run.events) {
      if (e.block == block && e.iteration == iteration && e.kind == static_cast<std::uint32_t>(kind)) return &e;
    }
    return nullptr;
  };
  for (std::uint32_t sender = 0; sender + 1 < 4; ++sender) {
    for (std::uint32_t it = 0; it + lab::kTimelineStages < 16; ++it) {
      const Event* released = find(sender + 1, it, Kind::release);
      const Event* reuse = find(sender, it + lab::kTimelineStages, Kind::issue);
      ASSERT_NE(released, nullptr);
      ASSERT_NE(reuse, nullptr);
      // The sender writes that buffer again only after the receiver's ready arrival, which follows its release.
      EXPECT_LE(released->t_ns, reuse->t_ns) << "block " << sender << ", message " << it + lab::kTimelineStages;
    }
  }
  for (const Event& e : run.events) {
    EXPECT_EQ(e.role, static_cast<std::uint32_t>(e.kind == static_cast<std::uint32_t>(Kind::issue)
                                                     ? course::timeline::Role::producer
                                                     : course::timeline::Role::consumer));
  }
}

TEST_F(Sm90_StasClusterTimeline, WritesTheCsvTheScriptDraws) {
  course::Options opts;
  opts.size_bytes = 20 * kMessageBytes;
  opts.timeline = ::testing::TempDir() + "stas_cluster_timeline.csv";
  std::ostringstream log;
  lab::write_timeline(opts, log);
  std::ifstream file(opts.timeline);
  std::stringstream text;
  text << file.rdbuf();
  EXPECT_EQ(text.str().rfind("# timeline: stas_cluster_lab, variant stas_ring, size 163840 bytes", 0), 0u)
      << text.str().substr(0, 200);
  EXPECT_TRUE(contains(text.str(), "\n# peer: ring 8\n"));
  EXPECT_TRUE(contains(text.str(), "\nblock,sm,role,stage,iteration,kind,t_ns\n"));
  EXPECT_TRUE(contains(text.str(), ",sender,0,0,issue,"));
  EXPECT_TRUE(contains(text.str(), ",receiver,0,0,land,"));
  EXPECT_TRUE(contains(log.str(), "events written to " + opts.timeline)) << log.str();
}

}  // namespace
