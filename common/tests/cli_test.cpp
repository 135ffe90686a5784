#include "course/chapter.hpp"
#include "course/cli.hpp"

#include <gtest/gtest.h>

namespace {

using course::parse_options;
using course::parse_size;
using course::UsageError;

TEST(HostCli, SizesWithUnits) {
  EXPECT_EQ(parse_size("4096"), 4096u);
  EXPECT_EQ(parse_size("64K"), 64u * 1024);
  EXPECT_EQ(parse_size("4MiB"), 4u << 20);
  EXPECT_EQ(parse_size("1G"), 1ull << 30);
  EXPECT_EQ(parse_size("3GiB"), 3ull << 30);
}

TEST(HostCli, BadSizesNameTheRule) {
  for (const char* bad : {"", "0", "-1", "4KB", "4 M", "M", "1.5G", "99999999999999999999G"}) {
    try {
      parse_size(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const UsageError& error) {
      EXPECT_NE(std::string(error.what()).find("--size takes"), std::string::npos) << error.what();
    }
  }
}

TEST(HostCli, ParsesEveryOption) {
  const course::Options o =
      parse_options({"--variant=cg_memcpy_async", "--size=8M", "--iters=7", "--bench", "--format=json"});
  EXPECT_EQ(o.variant, "cg_memcpy_async");
  EXPECT_EQ(o.size_bytes, 8u << 20);
  EXPECT_TRUE(o.size_given);
  EXPECT_EQ(o.iters, 7);
  EXPECT_TRUE(o.bench);
  EXPECT_EQ(o.format, course::Format::json);
  EXPECT_TRUE(parse_options({"--help"}).help);
}

TEST(HostCli, RejectsBadInput) {
  EXPECT_THROW(parse_options({"--iters=0"}), UsageError);
  EXPECT_THROW(parse_options({"--iters=x"}), UsageError);
  EXPECT_THROW(parse_options({"--format=xml"}), UsageError);
  EXPECT_THROW(parse_options({"--variant="}), UsageError);
  EXPECT_THROW(parse_options({"--bench=1"}), UsageError);
  EXPECT_THROW(parse_options({"--frobnicate"}), UsageError);
}

struct FakeVariant {
  const char* name;
  const char* summary;
};
const FakeVariant kTable[] = {{"alpha", "first"}, {"beta", "second"}};

course::ChapterInfo fake_info() {
  course::ChapterInfo info;
  info.program = "fake";
  info.verify_bytes = 4096;
  info.bench_bytes = 1 << 20;
  info.size_rule = [](std::size_t bytes) -> std::optional<std::string> {
    if (bytes % 1024 != 0) return "--size must be a multiple of 1024 bytes";
    return std::nullopt;
  };
  return info;
}

course::Options resolve(std::vector<const char*> args) {
  args.insert(args.begin(), "fake");
  return course::resolve_options(static_cast<int>(args.size()), const_cast<char**>(args.data()), fake_info(),
                                 course::variant_infos(kTable));
}

TEST(HostCli, AValueOnAFlagWithoutOneSaysSo) {
  for (const char* arg : {"--bench=1", "--help=yes", "-h=1"}) {
    try {
      parse_options({arg});
      ADD_FAILURE() << arg << " was accepted";
    } catch (const UsageError& error) {
      EXPECT_NE(std::string(error.what()).find("takes no value"), std::string::npos) << error.what();
    }
  }
}

TEST(HostCli, EchoedValuesShowInvisibleAndNonUtf8Bytes) {
  // A zero-width space after a variant name, and a byte that is not UTF-8: both visible, all ASCII.
  EXPECT_EQ(course::shown("parity\xe2\x80\x8b"), "parity\\xe2\\x80\\x8b");
  EXPECT_EQ(course::shown("a\xff" "b\tc"), "a\\xffb\\x09c");
  try {
    parse_options({"--format=js\xffon"});
    ADD_FAILURE() << "a bad format was accepted";
  } catch (const UsageError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("js\\xffon"), std::string::npos) << message;
    for (char c : message) EXPECT_LT(static_cast<unsigned char>(c), 0x80u) << message;
  }
}

TEST(HostCli, ResolvesDefaultsPerMode) {
  EXPECT_EQ(resolve({}).size_bytes, 4096u);
  EXPECT_EQ(resolve({"--bench"}).size_bytes, 1u << 20);
  EXPECT_EQ(resolve({"--bench", "--size=8K"}).size_bytes, 8192u);
}

TEST(HostCli, UnknownVariantListsTheKnownOnes) {
  try {
    resolve({"--variant=gamma"});
    FAIL() << "accepted an unknown variant";
  } catch (const UsageError& error) {
    EXPECT_NE(std::string(error.what()).find("alpha, beta"), std::string::npos) << error.what();
  }
}

TEST(HostCli, WholeMultiplesRuleNamesItself) {
  const auto rule = course::whole_multiples_of(4096, "--size must be a whole number of 4 KiB batches");
  EXPECT_FALSE(rule(4096));
  EXPECT_FALSE(rule(3 * 4096));
  EXPECT_EQ(rule(4096 + 16), "--size must be a whole number of 4 KiB batches");
  EXPECT_TRUE(rule(0));
}

TEST(HostCli, ChapterSizeRuleIsApplied) { EXPECT_THROW(resolve({"--size=1000"}), UsageError); }

}  // namespace

namespace {

TEST(HostCli, TebibytesAndTheUpperBound) {
  EXPECT_EQ(parse_size("2T"), 2ull << 40);
  EXPECT_EQ(parse_size("16TiB"), 16ull << 40);
  EXPECT_THROW(parse_size("17T"), UsageError);
  EXPECT_THROW(parse_size("17179869183G"), UsageError);  // 16 TiB less 1 GiB is fine, this is not
  EXPECT_EQ(parse_size("16383G"), 16383ull << 30);
}

TEST(HostCli, LongValuesAreCutWhenEchoed) {
  const std::string huge(100000, 'x');
  try {
    parse_options({"--format=" + huge});
    FAIL() << "accepted a 100 KB format";
  } catch (const UsageError& error) {
    const std::string message = error.what();
    EXPECT_LT(message.size(), 200u) << "the value was echoed whole";
    EXPECT_NE(message.find("(100000 characters)"), std::string::npos) << message;
  }
  EXPECT_EQ(course::shown("short"), "short");
}

TEST(HostCli, RepeatedOptionsAreAnError) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--size=4K", "--size=8K"}, {"--bench", "--bench"}, {"-h", "--help"},
        {"--variant=a", "--variant=a"}}) {
    try {
      parse_options(args);
      ADD_FAILURE() << "accepted " << args[0] << " twice";
    } catch (const UsageError& error) {
      EXPECT_NE(std::string(error.what()).find("given twice"), std::string::npos) << error.what();
    }
  }
}

TEST(HostCli, ItersNeedsBench) {
  EXPECT_THROW(parse_options({"--iters=5"}), UsageError);
  EXPECT_EQ(parse_options({"--iters=5", "--bench"}).iters, 5);
}

TEST(HostCli, FormatIsFoundEvenInBadInput) {
  EXPECT_EQ(course::requested_format({"--size=x", "--format=json"}), course::Format::json);
  EXPECT_EQ(course::requested_format({"--format=csv", "--bogus"}), course::Format::csv);
  EXPECT_EQ(course::requested_format({"--format=xml"}), course::Format::text);
}

TEST(HostCli, HelpStatesTheSizeRuleAndTheGpu) {
  course::ChapterInfo info = fake_info();
  info.requirement = {9, 0, false, "cp.async.bulk"};
  std::ostringstream out;
  course::print_help(out, info, course::variant_infos(kTable));
  EXPECT_NE(out.str().find("Rule: --size must be a multiple of 1024 bytes"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("Needs: compute capability 9.0 or newer (cp.async.bulk)"), std::string::npos) << out.str();
}

TEST(HostCli, OutcomesAreParseable) {
  std::ostringstream json, csv;
  course::print_outcome(json, course::Format::json, "fake", "skipped", "needs compute capability 9.0 \"x\"");
  EXPECT_EQ(json.str(),
            "{\"chapter\":\"fake\",\"status\":\"skipped\",\"reason\":\"needs compute capability 9.0 \\\"x\\\"\","
            "\"rows\":[]}\n");
  course::print_outcome(csv, course::Format::csv, "fake", "usage", "--size takes\na number");
  EXPECT_EQ(csv.str(),
            "chapter,variant,size_bytes,passed,median_ms,gbps,ratio_to_memcpy\n# status=usage\n"
            "# reason=--size takes a number\n");
}

}  // namespace

namespace {

// ---- --timeline=FILE: parsed for every program, accepted only where the chapter records one ----

course::ChapterInfo timeline_info() {
  course::ChapterInfo info = fake_info();
  info.timeline = [](const course::Options&, std::ostream&) {};
  info.timeline_variant = "beta";
  info.timeline_bytes = 64 * 1024;
  return info;
}

course::Options resolve_with(const course::ChapterInfo& info, std::vector<const char*> args) {
  args.insert(args.begin(), "fake");
  return course::resolve_options(static_cast<int>(args.size()), const_cast<char**>(args.data()), info,
                                 course::variant_infos(kTable));
}

std::string usage_message(const course::ChapterInfo& info, std::vector<const char*> args) {
  try {
    resolve_with(info, std::move(args));
  } catch (const UsageError& error) {
    return error.what();
  }
  return "";
}

TEST(HostCli, TimelineTakesAFileName) {
  EXPECT_EQ(parse_options({"--timeline=out/timeline.csv"}).timeline, "out/timeline.csv");
  EXPECT_EQ(parse_options({}).timeline, "");
  EXPECT_EQ(parse_options({"--timeline=t.csv", "--help"}).timeline, "t.csv");
}

TEST(HostCli, TimelineWithoutAFileIsRefusedNamingTheForm) {
  for (const char* bad : {"--timeline", "--timeline="}) {
    try {
      parse_options({bad});
      ADD_FAILURE() << "accepted " << bad;
    } catch (const UsageError& error) {
      EXPECT_NE(std::string(error.what()).find("--timeline=FILE"), std::string::npos) << error.what();
    }
  }
}

TEST(HostCli, TimelineGivenTwiceIsRefused) {
  try {
    parse_options({"--timeline=a.csv", "--timeline=b.csv"});
    FAIL() << "accepted two timelines";
  } catch (const UsageError& error) {
    EXPECT_NE(std::string(error.what()).find("--timeline is given twice"), std::string::npos) << error.what();
  }
}

TEST(HostCli, ProgramsWithoutATimelineRefuseIt) {
  const std::string message = usage_message(fake_info(), {"--timeline=t.csv"});
  EXPECT_NE(message.find("this program records no timeline"), std::string::npos) << message;
  EXPECT_EQ(usage_message(fake_info(), {"--timeline=t.csv", "--help"}), message) << "help does not hide the rule";
}

TEST(HostCli, TimelineRecordsItsOwnVariantAndHasItsOwnDefaultSize) {
  const course::ChapterInfo info = timeline_info();
  const course::Options plain = resolve_with(info, {"--timeline=t.csv"});
  EXPECT_EQ(plain.timeline, "t.csv");
  EXPECT_EQ(plain.size_bytes, 64u * 1024) << "the timeline's default size";
  EXPECT_EQ(resolve_with(info, {"--timeline=t.csv", "--size=8K"}).size_bytes, 8192u);
  EXPECT_EQ(resolve_with(info, {"--timeline=t.csv", "--bench"}).size_bytes, 1u << 20) << "--bench keeps its size";
  EXPECT_EQ(resolve_with(info, {}).size_bytes, 4096u) << "without --timeline nothing changes";
  EXPECT_EQ(resolve_with(info, {"--timeline=t.csv", "--variant=beta"}).variant, "beta");
  const std::string other = usage_message(info, {"--timeline=t.csv", "--variant=alpha"});
  EXPECT_NE(other.find("--timeline records the variant beta"), std::string::npos) << other;
  EXPECT_NE(usage_message(info, {"--timeline=t.csv", "--size=1000"}).find("multiple of 1024"), std::string::npos)
      << "the chapter's size rule holds for the timeline's run too";
}

TEST(HostCli, ATimelineThatCannotBeWrittenIsRefusedBeforeAnyGpuWork) {
  const course::ChapterInfo info = timeline_info();
  const std::string no_folder = usage_message(info, {"--timeline=/nonexistent/dir/t.csv"});
  EXPECT_NE(no_folder.find("--timeline must name a file in an existing folder"), std::string::npos) << no_folder;
  const std::string device = usage_message(info, {"--timeline=/dev/full"});
  EXPECT_NE(device.find("--timeline must name a regular file"), std::string::npos) << device;
  const std::string folder = usage_message(info, {"--timeline=/tmp"});
  EXPECT_NE(folder.find("--timeline must name a regular file"), std::string::npos) << folder;
  EXPECT_EQ(usage_message(info, {"--timeline=t.csv"}), "") << "a new file in the current folder is fine";
}

TEST(HostCli, HelpListsTheTimelineOnlyWhereItIsOffered) {
  std::ostringstream with, without;
  course::print_help(with, timeline_info(), course::variant_infos(kTable));
  course::print_help(without, fake_info(), course::variant_infos(kTable));
  EXPECT_NE(with.str().find("[--timeline=FILE]"), std::string::npos) << with.str();
  EXPECT_NE(with.str().find("runs beta once more"), std::string::npos) << with.str();
  EXPECT_NE(with.str().find("--size defaults to 64.00 KiB."), std::string::npos) << with.str();
  EXPECT_EQ(without.str().find("--timeline"), std::string::npos) << without.str();
}

}  // namespace
