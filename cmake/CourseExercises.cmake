# Graded exercises: NN_topic/exercises/, built when COURSE_EXERCISES is ON (the exercises and
# solutions presets), never in the default build, whose tests would fail on untouched starters.
#
# An exercise is three files, found by name; nothing is listed in CMake:
#   exercises/<name>.<ext>            the starter: code with TODOs that the student completes
#   exercises/solutions/<name>.<ext>  the same file, completed
#   exercises/<name>_test.cpp|.cu     its GoogleTest suite: #include COURSE_EXERCISE, which names the
#                                     starter, or the solution when COURSE_EXERCISE_SOLUTIONS is ON
# (<ext> is .hpp, .cuh or .cu). A test in a .cpp file is host code compiled by the C++ compiler:
# exercises on the chapter's host model, which run on any machine. A test in a .cu file may hold
# GPU suites (Sm<capability>_...), which skip with the reason on a GPU that lacks what they need.
# Suite names follow the course's rule (Host... or Sm<cc>_...).
#
# For each exercise: target NN_topic_exercise_<name> (executable exercise_<name>), its tests named
# NN_topic.exercises.<name>.<Suite>.<Test> and labelled exercise, host or gpu, and the chapter.
# The target `exercises` builds them all.
option(COURSE_EXERCISES "Build the graded exercises (NN_topic/exercises) and their tests" OFF)
option(COURSE_EXERCISE_SOLUTIONS "Build the exercises from their solutions instead of the starters" OFF)
if(COURSE_EXERCISES)
  add_custom_target(exercises)
  if(COURSE_EXERCISE_SOLUTIONS)
    message(STATUS "Exercises: built from exercises/solutions/ (COURSE_EXERCISE_SOLUTIONS=ON)")
  else()
    message(STATUS "Exercises: built from the starters; their tests fail until the TODOs are done")
  endif()
  # The run's closing summary: one line per chapter (done, to do, not graded here), not one per
  # exercise and failed test (scripts/exercise.py --summary). It replaces the course's
  # CTestCustom.cmake, which course_add_summary() writes at the end of the top directory.
  find_package(Python3 COMPONENTS Interpreter QUIET)
  if(Python3_FOUND)
    cmake_language(DEFER CALL course_write_exercise_summary)
  endif()
endif()

function(course_write_exercise_summary)
  file(WRITE "${CMAKE_BINARY_DIR}/CTestCustom.cmake"
       "set(CTEST_CUSTOM_POST_TEST \"\\\"${Python3_EXECUTABLE}\\\" "
       "\\\"${PROJECT_SOURCE_DIR}/scripts/exercise.py\\\" --summary "
       "\\\"${CMAKE_BINARY_DIR}/Testing/course_run.xml\\\"\")\n")
endfunction()

# Called by course_add_chapter for a chapter with an exercises/ folder. The exercises get a
# directory scope of their own (cmake/exercises/CMakeLists.txt, added once per chapter), whose
# LABELS give every test the labels exercise and the chapter's.
function(course_add_exercises chapter archs libraries)
  set(COURSE_EXERCISE_CHAPTER "${chapter}")
  set(COURSE_EXERCISE_DIR "${CMAKE_CURRENT_SOURCE_DIR}/exercises")
  set(COURSE_EXERCISE_ARCHS "${archs}")
  set(COURSE_EXERCISE_LIBRARIES "${libraries}")
  add_subdirectory("${PROJECT_SOURCE_DIR}/cmake/exercises" "${CMAKE_CURRENT_BINARY_DIR}/exercises")
endfunction()
