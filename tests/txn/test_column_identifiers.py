"""Column lists as Delta reads ``delta.dataSkippingStatsColumns``: Spark SQL's
``multipartIdentifierList`` without an end-of-input rule. Each expected answer is what
Spark 4.3's own parser (``SqlBaseParser.multipartIdentifierList``, set up as
``AbstractSqlParser.parse`` does) returned for the same text."""

from __future__ import annotations

import pytest

from deltalog.txn.protocol.column_identifiers import column_sql, parse_column_list, quote_if_needed

SPARK_READS = [
    ("a", [["a"]], ""),
    (" a , b.c ", [["a"], ["b", "c"]], ""),
    ("`a.b`.c", [["a.b", "c"]], ""),
    ("`a``b`", [["a`b"]], ""),
    ("``", [[""]], ""),
    ("```", [[""]], "`"),
    ("`a```", [["a`"]], ""),
    ("a.`b`.`c d`", [["a", "b", "c d"]], ""),
    ("A.B", [["A", "B"]], ""),
    ("a . b", [["a", "b"]], ""),
    ("1a.2b", [["1a", "2b"]], ""),
    ("a.1a", [["a", "1a"]], ""),
    ("1e5l", [["1e5l"]], ""),
    ("select, from, x, true, null", [["select"], ["from"], ["x"], ["true"], ["null"]], ""),
    ("`é`", [["é"]], ""),
    ("a/*c*/,b", [["a"], ["b"]], ""),
    ("a -- x", [["a"]], ""),
    ("a /* x", [["a"]], ""),
    # Spark's parser stops where the list cannot go on and leaves the rest unread
    ("a b", [["a"]], "b"),
    ("a b,c", [["a"]], "b,c"),
    ("a,b c", [["a"], ["b"]], "c"),
    ("a.b c", [["a", "b"]], "c"),
    ("a-1", [["a"]], "-1"),
    ("a->b", [["a"]], "->b"),
    ("a;b", [["a"]], ";b"),
    ("a.", [["a"]], "."),
    ("a.,b", [["a"]], ".,b"),
    ("a.1", [["a"]], ".1"),
    ("a.1e3", [["a"]], ".1e3"),
    ("a.1L", [["a"]], ".1L"),
    ('a."b', [["a"]], '."b'),
    ("`a`b", [["a"]], "b"),
    ("a`b`", [["a"]], "`b`"),
]

SPARK_REFUSES = [
    "a,,b",
    "a,",
    ",a",
    "123",
    "1e5",
    "1L",
    "1bd",
    "1.5",
    "1.5x",
    "a,1.5",
    "a-b",
    "a - b",
    "a.b-c",
    "a-b,c",
    "é",
    "/* x",
    "/* */",
    "`a",
    "a,`b",
    "${x}",
    "file://x",
    '"a"',
    'a."b"',
    'a-"b"',
    "R'a'",
]


@pytest.mark.parametrize(("text", "paths", "rest"), SPARK_READS)
def test_lists_are_read_as_spark_reads_them(text: str, paths: list[list[str]], rest: str) -> None:
    parsed = parse_column_list(text)
    assert ([list(p) for p in parsed.paths], parsed.rest) == (paths, rest)


@pytest.mark.parametrize("text", SPARK_REFUSES)
def test_lists_spark_refuses_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match=r"position|quoted"):
        parse_column_list(text)


def test_a_blank_list_names_no_column() -> None:
    assert parse_column_list("  ").paths == ()


def test_names_are_written_back_as_spark_writes_them() -> None:
    # Spark's quoteIfNeeded / UnresolvedAttribute.sql
    assert [quote_if_needed(n) for n in ["a", "_x", "A1", "1a", "a b", "a.b", "a`b", "", "é", "select"]] == [
        "a",
        "_x",
        "A1",
        "`1a`",
        "`a b`",
        "`a.b`",
        "`a``b`",
        "``",
        "`é`",
        "select",
    ]
    path = ("a b", "c.d", "e`f", "g")
    assert column_sql(path) == "`a b`.`c.d`.`e``f`.g"
    assert parse_column_list(column_sql(path)).paths == (path,)
