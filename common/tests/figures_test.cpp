// The figure programs' shared command line (course/figures.hpp) and the checks of their tests
// (course/testing.hpp), on a made-up program with two figures.
#include "course/figures.hpp"
#include "course/testing.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

const char* const kProgram = "made_up_figures";

std::string square_svg() { return "<svg viewBox=\"0 0 10 10\">\n<rect width=\"4\"/>\n</svg>\n"; }
std::string circle_svg() { return "<svg viewBox=\"0 0 10 10\">\n<circle r=\"3\"/>\n</svg>\n"; }

std::vector<course::Figure> made_up_figures() {
  return {{"square.svg", square_svg}, {"circle.svg", circle_svg}};
}

struct Outcome {
  int code;
  std::string out, err;
};
Outcome run(const std::vector<std::string>& args,
        const std::vector<course::Figure>& figures = made_up_figures()) {
  std::ostringstream out, err;
  const int code = course::figures_main(kProgram, figures, args, out, err);
  return {code, out.str(), err.str()};
}

// A new, empty folder of this test process; removed when the test ends.
class Folder {
 public:
  explicit Folder(const std::string& name)
      : path_(std::filesystem::temp_directory_path() /
              (name + "." + std::to_string(getpid()))) {
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~Folder() { std::filesystem::remove_all(path_); }
  const std::filesystem::path& path() const { return path_; }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

void write_file(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

const char* const kUsage = "usage: made_up_figures DIR\n  writes DIR/square.svg, DIR/circle.svg\n";

TEST(HostFiguresMain, HelpPrintsTheUsageNamingEveryFile) {
  for (const char* help : {"--help", "-h"}) {
    const Outcome r = run({help});
    EXPECT_EQ(r.code, 0) << help;
    EXPECT_EQ(r.out, kUsage);
    EXPECT_EQ(r.err, "");
  }
}

TEST(HostFiguresMain, BadArgumentsExitTwoNamingTheRule) {
  const Outcome none = run({});
  EXPECT_EQ(none.code, 2);
  EXPECT_EQ(none.out, "");
  EXPECT_EQ(none.err, std::string("made_up_figures: expected one argument, the folder to write "
                                  "into (got 0)\n") + kUsage);
  const Outcome two = run({"a", "b"});
  EXPECT_EQ(two.code, 2);
  EXPECT_EQ(two.err.rfind("made_up_figures: expected one argument, the folder to write into "
                          "(got 2)\n", 0), 0u) << two.err;
  const Outcome option = run({"--output=figures"});
  EXPECT_EQ(option.code, 2);
  EXPECT_EQ(option.out, "");
  EXPECT_EQ(option.err, "made_up_figures: unknown option '--output=figures': the only option is "
                        "--help; the argument is a folder\n");
}

TEST(HostFiguresMain, AMissingFolderIsOneLineAndNothingIsCreated) {
  const Folder parent("figures_main_missing");
  const std::string missing = parent.file("no_such_folder");
  const Outcome r = run({missing});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err,
            "made_up_figures: no folder '" + missing + "' to write into (create it first)\n");
  EXPECT_FALSE(std::filesystem::exists(missing));
}

TEST(HostFiguresMain, WritesEveryFigureAsDrawn) {
  const Folder dir("figures_main_writes");
  const Outcome r = run({dir.path().string()});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "wrote " + dir.file("square.svg") + "\nwrote " + dir.file("circle.svg") + "\n");
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(course::read_text_file(dir.file("square.svg")), square_svg());
  EXPECT_EQ(course::read_text_file(dir.file("circle.svg")), circle_svg());
}

TEST(HostFiguresMain, AFileThatCannotBeWrittenIsOneLineAndExitOne) {
  const Folder dir("figures_main_unwritable");
  std::filesystem::create_directories(dir.path() / "circle.svg");  // a folder in the file's place
  const Outcome r = run({dir.path().string()});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.out, "wrote " + dir.file("square.svg") + "\n");
  EXPECT_EQ(r.err, "made_up_figures: cannot write " + dir.file("circle.svg") + "\n");
}

TEST(HostFiguresMain, TheFirstDifferingLineIsNamed) {
  EXPECT_EQ(course::first_differing_line("a\nb\n", "a\nb\n"), "");
  EXPECT_EQ(course::first_differing_line("a\nb\nc\n", "a\nB\nc\n"),
            "line 2: the file has `b`, the drawing `B`");
  EXPECT_EQ(course::first_differing_line("a\n", "a\nb\n"),
            "line 2: the file has `(none)`, the drawing `b`");
  EXPECT_EQ(course::first_differing_line("a\nb", "a\nb\n"),
            "line 2: the file has `b`, the drawing `b` "
            "(one of them ends there without a newline)");
}

TEST(HostFiguresFresh, CommittedFiguresThatAreTheirDrawingsPass) {
  const Folder chapter("99_made_up");
  const std::filesystem::path dir = chapter.path() / "figures";
  std::filesystem::create_directories(dir);
  write_file((dir / "square.svg").string(), square_svg());
  write_file((dir / "circle.svg").string(), circle_svg());
  EXPECT_TRUE(course::figures_are_fresh(kProgram, made_up_figures(), dir));
}

TEST(HostFiguresFresh, AChangedByteIsCaughtAndItsLineNamed) {
  const Folder chapter("99_made_up");
  const std::filesystem::path dir = chapter.path() / "figures";
  std::filesystem::create_directories(dir);
  write_file((dir / "square.svg").string(), square_svg());
  std::string stale = circle_svg();
  stale[stale.find("r=\"3\"") + 3] = '4';
  write_file((dir / "circle.svg").string(), stale);
  const ::testing::AssertionResult fresh =
      course::figures_are_fresh(kProgram, made_up_figures(), dir);
  ASSERT_FALSE(fresh);
  const std::string regenerate = "regenerate: build/" + chapter.path().filename().string() +
                                 "/made_up_figures " + chapter.path().filename().string() +
                                 "/figures";
  EXPECT_EQ(fresh.message(), (dir / "circle.svg").string() + " is not its drawing at line 2: "
                             "the file has `<circle r=\"4\"/>`, the drawing `<circle r=\"3\"/>`; " +
                             regenerate);
  std::filesystem::remove(dir / "square.svg");
  const ::testing::AssertionResult missing =
      course::figures_are_fresh(kProgram, made_up_figures(), dir);
  ASSERT_FALSE(missing);
  EXPECT_EQ(std::string(missing.message()).rfind("cannot read " + (dir / "square.svg").string(), 0),
            0u) << missing.message();
}

TEST(HostFiguresProgram, TheMadeUpProgramWorks) {
  EXPECT_TRUE(course::figures_program_works(kProgram, made_up_figures()));
}

TEST(HostFiguresProgram, ADrawingThatChangesFromCallToCallIsCaught) {
  int calls = 0;
  const std::vector<course::Figure> figures = {
      {"square.svg", square_svg},
      {"counter.svg",
       [&calls] { return "<svg>\n<text>" + std::to_string(++calls) + "</text>\n"; }}};
  const ::testing::AssertionResult works = course::figures_program_works(kProgram, figures);
  ASSERT_FALSE(works);
  EXPECT_NE(std::string(works.message()).find("counter.svg: line 2: the file has `<text>1</text>`"
                                              ", the drawing `<text>2</text>`"),
            std::string::npos) << works.message();
}

}  // namespace
