# cmake -DSOURCE=<repository> -DOUT=<folder> -DCHAPTERS=<NN_a;NN_b;...> -P prepare_pages.cmake
#
# The site's copy of every chapter page: the core page README.md (written to OUT/NN_topic.md) and,
# where the chapter has one, its reference page REFERENCE.md (OUT/NN_topic_reference.md), which
# follows the core page in the navigation. The pages a reader sees on GitHub stay plain
# Markdown; the copy Doxygen reads gains what only the site can show:
#   - the page label on the first line ({#chNN_topic}, {#chNN_topic_reference}), where the page
#     has none,
#   - a table of contents ([TOC], which doxygen-awesome-css turns into a side panel),
#   - previous / next links to the neighbouring pages, at the top and the bottom,
#   - links to the chapter's files on the site,
#   - links between chapter pages (README.md, REFERENCE.md, ../NN_topic/README.md,
#     ../NN_topic/REFERENCE.md, each with or without #label), and to pages of docs/
#     (../docs/name.md), turned into links between site pages,
#     anchor lines (<a name="label"></a>) into heading labels, and links to labels into @ref,
#     undoing what scripts/pages.py does to keep the pages plain Markdown for GitHub,
#   - quoted files linked to their pages on the site.
cmake_minimum_required(VERSION 3.25)
string(REPLACE "," ";" CHAPTERS "${CHAPTERS}")
file(MAKE_DIRECTORY "${OUT}")

# Titles first: every page links to its neighbours by their titles. A page is named by its
# label without the "ch": NN_topic (README.md) or NN_topic_reference (REFERENCE.md).
set(pages "")
foreach(chapter IN LISTS CHAPTERS)
  foreach(kind README REFERENCE)
    set(source "${SOURCE}/${chapter}/${kind}.md")
    if(NOT EXISTS "${source}")
      continue()
    endif()
    if(kind STREQUAL "README")
      set(name "${chapter}")
    else()
      set(name "${chapter}_reference")
    endif()
    file(STRINGS "${source}" first LIMIT_COUNT 1 ENCODING UTF-8)
    string(REGEX REPLACE "^# +" "" title "${first}")
    string(REGEX REPLACE " *\\{#[A-Za-z0-9_]+\\} *$" "" title "${title}")
    set(title_${name} "${title}")
    set(source_${name} "${source}")
    set(chapter_${name} "${chapter}")
    list(APPEND pages "${name}")
  endforeach()
endforeach()

list(LENGTH pages count)
math(EXPR last "${count} - 1")
foreach(index RANGE ${last})
  list(GET pages ${index} page_name)
  set(chapter "${chapter_${page_name}}")
  file(READ "${source_${page_name}}" text ENCODING UTF-8)
  string(FIND "${text}" "\n" eol)
  string(SUBSTRING "${text}" 0 ${eol} first)
  string(SUBSTRING "${text}" ${eol} -1 body)
  if(NOT first MATCHES "\\{#ch${page_name}\\} *$")
    string(REGEX REPLACE " *\\{#[A-Za-z0-9_]+\\} *$" "" first "${first}")
    set(first "${first} {#ch${page_name}}")
  endif()

  set(nav "")
  if(index GREATER 0)
    math(EXPR previous "${index} - 1")
    list(GET pages ${previous} other)
    string(APPEND nav "&larr; Previous: @ref ch${other} \"${title_${other}}\"")
  endif()
  if(index LESS last)
    math(EXPR next "${index} + 1")
    list(GET pages ${next} other)
    if(NOT nav STREQUAL "")
      string(APPEND nav " &nbsp;&middot;&nbsp; ")
    endif()
    string(APPEND nav "Next: @ref ch${other} \"${title_${other}}\" &rarr;")
  endif()

  # The chapter's programs and model, each linked to its page on the site (Examples).
  file(GLOB sources RELATIVE "${SOURCE}/${chapter}" "${SOURCE}/${chapter}/*.cu" "${SOURCE}/${chapter}/*.hpp")
  list(SORT sources)
  set(files "")
  foreach(source IN LISTS sources)
    string(REPLACE "." "_8" html "${source}")  # Doxygen's page of an example: . becomes _8
    string(APPEND files "${files_sep}[${source}](${html}-example.html)")
    set(files_sep " &middot; ")
  endforeach()
  set(files_sep "")

  # What scripts/pages.py made plain Markdown for GitHub, back in Doxygen's terms: anchor lines
  # above headings become heading labels, links to labels and chapter pages become @ref.
  string(REGEX REPLACE "<a name=\"([A-Za-z0-9_]+)\"></a>\n(#+ [^\n]*)" "\\2 {#\\1}" body "${body}")
  # A label on another page (of this chapter or another): labels are unique across the site.
  string(REGEX REPLACE "\\[([^]\n]*)\\]\\((\\.\\./[0-9][0-9]_[a-z0-9_]+/)?(README|REFERENCE)\\.md#([A-Za-z0-9_]+)\\)" "@ref \\4 \"\\1\"" body "${body}")
  # A page's title: another chapter's core or reference page, or the other page of this chapter.
  string(REGEX REPLACE "\\[([^]\n]*)\\]\\(\\.\\./([0-9][0-9]_[a-z0-9_]+)/README\\.md\\)" "@ref ch\\2 \"\\1\"" body "${body}")
  string(REGEX REPLACE "\\[([^]\n]*)\\]\\(\\.\\./([0-9][0-9]_[a-z0-9_]+)/REFERENCE\\.md\\)" "@ref ch\\2_reference \"\\1\"" body "${body}")
  string(REGEX REPLACE "\\[([^]\n]*)\\]\\(README\\.md\\)" "@ref ch${chapter} \"\\1\"" body "${body}")
  string(REGEX REPLACE "\\[([^]\n]*)\\]\\(REFERENCE\\.md\\)" "@ref ch${chapter}_reference \"\\1\"" body "${body}")
  string(REGEX REPLACE "\\[([^]\n]*)\\]\\(#([A-Za-z0-9_]+)\\)" "@ref \\2 \"\\1\"" body "${body}")
  # A link to a page of docs/ (../docs/name.md): its label is the file's name.
  string(REGEX REPLACE "\\[([^]\n]*)\\]\\(\\.\\./docs/([a-z0-9_]+)\\.md\\)" "@ref \\2 \"\\1\"" body "${body}")
  # A heading with a code span: Doxygen 1.9 shows the span's <tt> tags as text in the table of
  # contents, so on the site a heading keeps the words and drops the backquotes.
  foreach(pass RANGE 3)
    string(REGEX REPLACE "\n(#+ [^\n`]*)`([^`\n]*)`" "\n\\1\\2" body "${body}")
  endforeach()
  # Bold text (**...**): Doxygen 1.9 leaves the asterisks where the span holds code, quotes or a
  # line break; HTML tags it always renders. Code inside becomes <code>.
  string(REGEX MATCHALL "\\*\\*[^*]+\\*\\*" bolds "${body}")
  list(REMOVE_DUPLICATES bolds)
  foreach(bold IN LISTS bolds)
    string(REGEX REPLACE "^\\*\\*(.*)\\*\\*$" "<b>\\1</b>" html "${bold}")
    string(REGEX REPLACE "`([^`]*)`" "<code>\\1</code>" html "${html}")
    string(REPLACE "${bold}" "${html}" body "${body}")
  endforeach()
  # A link to a file of the chapter or of the shared library: its page on the site (a chapter's
  # file under Examples, a library file's source).
  string(REGEX REPLACE "\\]\\(([A-Za-z0-9_]+)\\.(cu|cuh|hpp|cpp)\\)" "](\\1_8\\2-example.html)" body "${body}")
  # (Doxygen doubles the underscores of a file's name in the name of its source page.)
  string(REGEX MATCHALL "\\(\\.\\./common/course/[A-Za-z0-9_]+\\.(cuh|hpp)\\)" library_links "${body}")
  list(REMOVE_DUPLICATES library_links)
  foreach(link IN LISTS library_links)
    string(REGEX REPLACE "^\\(\\.\\./common/course/([A-Za-z0-9_]+)\\.(cuh|hpp)\\)$" "\\1" stem "${link}")
    string(REGEX REPLACE "^.*\\.(cuh|hpp)\\)$" "\\1" extension "${link}")
    string(REPLACE "_" "__" stem "${stem}")
    string(REPLACE "]${link}" "](${stem}_8${extension}_source.html)" body "${body}")
  endforeach()
  # The exercises are files to edit in the checkout, not pages of the site: their links keep
  # only their text (the file's name).
  string(REGEX REPLACE "\\[([^]\n]*)\\]\\((exercises/[^)\n]*)\\)" "\\1" body "${body}")
  set(page "${first}\n\n${nav}\n\n[TOC]\n")
  if(NOT files STREQUAL "")
    string(APPEND page "\n<b>Files:</b> ${files}\n")
  endif()
  string(APPEND page "${body}\n\n---\n${nav}\n")
  file(WRITE "${OUT}/${page_name}.md" "${page}")
endforeach()
