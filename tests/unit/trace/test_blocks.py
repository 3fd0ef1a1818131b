"""Systrace HTML blocks: the ftrace block, the process dump before it, truncation."""

from __future__ import annotations

from nnemu.trace import (
    PROCESS_DUMP,
    TRACE_DATA_OPEN,
    DumpProcess,
    DumpThread,
    FtraceLines,
    ProcessDump,
    process_name,
)

ROW = "app-10  ( 10) [000] ...1 1.000001: tracing_mark_write: B|10|[NN_LA_PE]m\n"


def html(*blocks: str, close_last: bool = True) -> list[str]:
    """A systrace HTML file holding the given trace-data blocks, as lines."""
    text = "<!DOCTYPE html>\n<html>\n<script>var x;</script>\n"
    for index, block in enumerate(blocks):
        text += f"  {TRACE_DATA_OPEN}\n{block}"
        if close_last or index < len(blocks) - 1:
            text += "  </script>\n"
    text += "</html>\n"
    return text.splitlines(keepends=True)


DUMP = (
    f"{PROCESS_DUMP}\n"
    "USER           PID  PPID     VSZ    RSS WCHAN  PC S NAME                        COMM\n"
    "u0_a1          10     1       0      0 SyS_epoll_wait 0 S com.example.app  app_process64\n"
    "system       2000     1       0      0 binder 0 S android.hardware.nn@1.3-service  nn\n"
    "USER           PID   TID CMD\n"
    "u0_a1          10    11 worker thread\n"
)


def test_ftrace_block_lines_are_numbered_as_in_the_file():
    """The rows after the block's ``# tracer:`` line come out, numbered as in the whole file."""
    lines = html("# tracer: nop\n" + ROW)
    source = FtraceLines(lines)
    got = list(source)
    assert got == [(6, ROW)]
    assert (source.is_html, source.found_ftrace, source.truncated) == (True, True, False)
    assert lines[got[0][0] - 1] == ROW


def test_process_dump_before_the_ftrace_block_names_processes():
    """Process names come from the dump's process listing, long names with spaces kept."""
    seen: list[dict[str, str]] = []
    source = FtraceLines(html(DUMP, "# tracer: nop\n" + ROW), on_ftrace=seen.append)
    list(source)
    assert source.process_names == {
        "10": "com.example.app",
        "2000": "android.hardware.nn@1.3-service",
    }
    assert seen == [source.process_names]


def test_dump_rows_go_to_the_hook_processes_then_threads():
    """A reader that wants the thread listing gets every process and thread row."""
    dumped: list[DumpProcess | DumpThread] = []
    list(FtraceLines(html(DUMP, "# tracer: nop\n" + ROW), on_dump=dumped.append))
    assert dumped == [
        DumpProcess(pid=10, name="com.example.app"),
        DumpProcess(pid=2000, name="android.hardware.nn@1.3-service"),
        DumpThread(pid=10, tid=11, name="worker thread"),
    ]


def test_process_dump_rows_need_a_header_and_pids_in_range():
    """Rows before a header, with non-ASCII or out-of-range ids, or too short are skipped."""
    dump = ProcessDump()
    assert dump.read("root 1 0 0 0 x 0 S init init") is None
    assert dump.read("USER PID PPID VSZ RSS WCHAN PC S NAME COMM") is None
    assert dump.read("root 1 0 0 0 x 0 S init init") == DumpProcess(pid=1, name="init")
    assert dump.read("root 1 0 0 0 x 0 S") is None
    assert dump.read("root 2147483648 0 0 0 x 0 S big big") is None
    assert dump.read("root \u0661 0 0 0 x 0 S arabic one") is None
    assert dump.read("USER PID TID CMD") is None
    assert dump.read("root 1 3 a thread with many words in its name") == DumpThread(
        pid=1, tid=3, name="a thread with many words in its name"
    )
    assert dump.read(PROCESS_DUMP) is None
    assert dump.read("root 1 3 init") is None


def test_blocks_that_are_neither_dump_nor_ftrace_are_skipped():
    """A JSON metadata block is not read as rows, and no block at all means no ftrace."""
    source = FtraceLines(html('{"meta": 1}\n'))
    assert list(source) == []
    assert (source.is_html, source.found_ftrace) == (True, False)


def test_ftrace_block_without_closing_tag_is_truncated():
    """A file cut inside the ftrace block still yields its rows and says it was truncated."""
    lines = html("# tracer: nop\n" + ROW, close_last=False)
    assert lines[-1] == "</html>\n"
    source = FtraceLines([*lines[:-1], ROW.rstrip("\n")])
    rows = list(source)
    assert rows[0] == (6, ROW)
    assert rows[-1][1] == ROW.rstrip("\n")
    assert source.truncated
    assert source.last_line_unterminated
    assert source.last_line_number == 7


def test_plain_ftrace_text_is_read_whole():
    """Text that is not HTML is ftrace text: every line from the first non-blank one."""
    source = FtraceLines(["\n", "# tracer: nop\n", ROW])
    assert list(source) == [(2, "# tracer: nop\n"), (3, ROW)]
    assert (source.is_html, source.found_ftrace, source.last_line_number) == (False, True, 3)


def test_process_name_takes_the_name_column_of_a_ps_tail():
    """NAME and COMM are split at a run of spaces; a single space splits at the first word."""
    assert process_name(" com.example.my app   app_process64 ") == "com.example.my app"
    assert process_name("init init") == "init"
