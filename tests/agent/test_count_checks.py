"""Line, word and character counts a run wrote about workspace files, held against the files."""

from __future__ import annotations

from pathlib import Path

from pymanus.agent import progress
from pymanus.agent.count_checks import count_problems
from pymanus.agent.manus import missing_outputs
from pymanus.tools.tool import ToolContext

TASK = "For each .txt file in the texts folder, count its lines and words, and write counts.md."
ALPHA = "The river runs past the old mill\nand the mill wheel turns all day\n"  # 2 lines, 14 words
BETA = "Rain again today"  # 1 line without a line break, 3 words


def started(workspace: Path) -> ToolContext:
    (workspace / "texts").mkdir()
    (workspace / "texts" / "alpha.txt").write_text(ALPHA)
    (workspace / "texts" / "beta.txt").write_text(BETA)
    context = ToolContext(run_id="r", workspace=workspace)
    progress.task_message(TASK, context)
    return context


def test_counts_the_files_do_not_have_send_the_answer_back(tmp_path: Path) -> None:
    context = started(tmp_path)
    # One "word" per line: the 1.5B's re.findall(r'\n', line) or line.split().
    wrong = "| file | lines | words |\n|---|---|---|\n| texts/alpha.txt | 2 | 2 |\n| texts/beta.txt | 1 | 1 |\n"
    (tmp_path / "counts.md").write_text(wrong + "| total | 3 | 3 |\n")
    assert count_problems(context) == [
        "counts.md gives counts the files do not have: texts/alpha.txt has 14 words, not 2; texts/beta.txt has "
        "3 words, not 1; count each file's text with python (len(text.split()), len(text.splitlines())) and "
        "write the table from those counts"
    ]
    problem = missing_outputs(TASK, "Done.", context)
    assert problem is not None and "texts/alpha.txt has 14 words, not 2" in problem


def test_right_counts_pass_whichever_way_a_last_line_is_counted(tmp_path: Path) -> None:
    context = started(tmp_path)
    # beta.txt has no final line break: 1 line by splitlines(), 0 by wc -l; names alone find the files.
    (tmp_path / "counts.md").write_text(
        "| File | Line count | Words |\n|:--|--:|--:|\n"
        "| alpha.txt | 2 | 14 |\n| beta.txt | 0 | 3 |\n| Total | 2 | 17 |\n"
    )
    (tmp_path / "counts.csv").write_text("file,num_lines,word_count\ntexts/alpha.txt,2,14\ntexts/beta.txt,1,3\n")
    assert count_problems(context) == []
    assert missing_outputs(TASK, "Done.", context) is None


def test_tables_of_other_things_are_not_judged(tmp_path: Path) -> None:
    context = started(tmp_path)
    (tmp_path / "report.md").write_text("| file | owner |\n|---|---|\n| texts/alpha.txt | 7 |\n")  # no count column
    (tmp_path / "scores.csv").write_text("player,words\nana,12\n")  # a row that names no file
    (tmp_path / "chars.csv").write_text("file,characters\ntexts/alpha.txt,many\ntexts/gone.txt,4\n")
    assert count_problems(context) == []


def test_a_wrong_character_count_in_a_csv_is_named(tmp_path: Path) -> None:
    context = started(tmp_path)
    (tmp_path / "sizes.csv").write_text("file,characters\ntexts/beta.txt,99\n")
    [problem] = count_problems(context)
    assert problem.startswith("sizes.csv gives counts the files do not have: texts/beta.txt has 16 characters, not 99")
    assert "(len(text))" in problem


def test_a_table_of_counts_naming_no_file_sends_the_answer_back(tmp_path: Path) -> None:
    # word_counts run 206: os.walk('.\texts') found nothing and counts.md held a total row only.
    context = started(tmp_path)
    (tmp_path / "counts.md").write_text("| file | lines | words |\n|---|---|---|\n| Total | 0 | 0 |\n")
    assert count_problems(context) == [
        "counts.md counts lines, words, but no row of its table names a file of the workspace ('Total'): the "
        "code found no files to count; check the folder it searched (a path relative to the workspace, with /) "
        "and write a row for each file"
    ]
    other = ToolContext(run_id="r", workspace=tmp_path)  # a task not about each file: such a table may be right
    progress.task_message("Count the lines and words of the meeting notes per speaker into counts.md.", other)
    (tmp_path / "counts.md").write_text("| speaker | lines | words |\n|---|---|---|\n| Ana | 2 | 9 |\n")
    assert count_problems(other) == []
