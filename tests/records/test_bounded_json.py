"""The bounded JSON parser: each count at its bound is parsed, one past it is refused by name
before anything is built; strings hide what they hold; strict mode keeps the receipt's rules."""

from __future__ import annotations

import math

import pytest

from bounded_json import JsonBounds, JsonRefused, count, loads

ROOMY = JsonBounds(size=10_000, containers=100, values=100, strings=100, depth=10)


def _bounds(**most: int) -> JsonBounds:
    return JsonBounds(**{**ROOMY.__dict__, **most})


# (text, the count it reaches, its figure): each text is exactly at the figure.
AT_BOUND = [
    ("[{},{},{}]", "containers", 4),
    ("[1,2,3,4]", "values", 5),  # three commas, one container, one top-level value
    ('{"a":"b","c":["d"]}', "strings", 4),
    ("[[[[]]]]", "depth", 4),
    ("[1, 2]", "size", 6),
]


@pytest.mark.parametrize(("text", "field", "figure"), AT_BOUND)
@pytest.mark.parametrize("kind", [str, bytes])
def test_a_text_at_each_bound_is_parsed_and_one_past_is_refused_by_name(
    text, field, figure, kind
) -> None:
    raw = text if kind is str else text.encode()
    counted = len(raw) if field == "size" else getattr(count(raw), field)
    assert counted == figure
    assert loads(raw, "t.json", _bounds(**{field: figure})) is not None
    with pytest.raises(JsonRefused, match=r"^t\.json: ") as refused:
        loads(raw, "t.json", _bounds(**{field: figure - 1}))
    assert str(figure - 1) in str(refused.value)


def test_the_message_names_what_was_counted_and_the_bound() -> None:
    text = "[" + "{}," * 40 + "{}]"
    with pytest.raises(JsonRefused) as refused:
        loads(text, "receipt.json", _bounds(containers=5))
    assert str(refused.value) == "receipt.json: 42 objects and arrays, more than 5"
    with pytest.raises(JsonRefused) as refused:
        loads("[" + "0," * 200 + "0]", "receipt.json", ROOMY)
    assert str(refused.value) == (
        "receipt.json: 202 values (array elements and object members), more than 100"
    )
    with pytest.raises(JsonRefused, match=r"nested too deeply \(more than 10 levels\)"):
        loads("[" * 11 + "]" * 11, "receipt.json", ROOMY)


def test_brackets_commas_and_escaped_quotes_inside_strings_are_not_counted() -> None:
    text = r'{"a": "[[[{{{,,,", "b\"[": "\\", "c": ["]]]\"}"]}'
    found = count(text)
    assert (found.containers, found.values, found.strings, found.depth) == (2, 5, 6, 2)
    assert count(text.encode()) == found
    assert loads(text, "t", _bounds(containers=2, depth=2))['b"['] == "\\"


def test_the_depth_walk_stops_one_past_the_bound_and_leaves_unbalanced_text_to_json() -> None:
    assert count("[" * 50 + "]" * 50, ROOMY).depth == ROOMY.depth + 1
    assert count("[" * 50 + "]" * 50).depth == 50
    with pytest.raises(JsonRefused, match="not valid JSON: Expecting"):
        loads("[}", "t", ROOMY)


def test_a_deep_text_is_refused_before_json_recurses() -> None:
    deep = "[" * 100_000 + "]" * 100_000
    with pytest.raises(JsonRefused, match=r"more than 16 levels"):
        loads(deep, "t", JsonBounds(size=10**6, containers=10**6, values=10**6, strings=0))


def test_strict_refuses_constants_and_duplicate_keys_and_plain_does_not() -> None:
    for text, why in (('{"a": NaN}', "constant NaN"), ('{"a": 1, "a": 2}', "duplicate key 'a'")):
        with pytest.raises(JsonRefused, match=f"t: not valid JSON: .*{why}"):
            loads(text, "t", ROOMY, strict=True)
    assert math.isnan(loads('{"a": NaN}', "t", ROOMY)["a"])
    assert loads('{"a": 1, "a": 2}', "t", ROOMY) == {"a": 2}


def test_bytes_must_be_utf8_and_are_counted_before_they_are_decoded() -> None:
    with pytest.raises(JsonRefused, match=r"^t: not UTF-8 text"):
        loads(b'["\xff"]', "t", ROOMY)
    with pytest.raises(JsonRefused, match="objects and arrays"):
        loads(b"[{}," * 200 + b"\xff", "t", ROOMY)


def test_past_the_strings_bound_the_quotes_refuse_before_anything_is_copied() -> None:
    text = "[" + ",".join(['"ab"'] * 300) + "]"
    found = count(text, ROOMY)
    assert (found.strings, found.containers) == (300, 0)  # the rest is not followed
    with pytest.raises(JsonRefused, match=r"^t: 300 strings, more than 100$"):
        loads(text, "t", ROOMY)
    assert count(text).strings == 300


def test_an_unterminated_string_runs_to_the_end_and_json_names_it() -> None:
    text = '["a", "b' + "\\" + '"' + "[" * 50
    assert count(text).strings == 2
    with pytest.raises(JsonRefused, match="not valid JSON: Unterminated string"):
        loads(text, "t", ROOMY)
