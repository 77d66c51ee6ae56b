"""The identity rules every parser, the manual trigger and the CLI share (pure)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from intake import hygiene
from intake.manual_request import ManualTrigger, parse_manual_body, problems


@pytest.mark.parametrize("value, ok", [
    ("d-1", True), ("pull_request.opened", True), ("acme/api#44", True), ("x" * 256, True),
    ("", False), ("x" * 257, False), ("a\x00b", False), ("a\nb", False), ("a\u202eb", False), ("a\u2028b", False),
    ("..", False), ("../x", False), ("a/./b", False), ("a\\..\\b", False), ("...", True), ("a..b", True), (7, False)])
def test_identity_text(value, ok):
    assert (hygiene.identity_text(value, 256) is not None) == ok


@pytest.mark.parametrize("value, ok", [("acme", True), ("a.b-c_d", True), (".", False), ("..", False),
                                       ("a/b", False), ("x" * 101, False), ("é", False), ("", False)])
def test_repo_name(value, ok):
    assert (hygiene.repo_name(value) is not None) == ok


@pytest.mark.parametrize("value, ok", [(1, True), (2**31 - 1, True), (0, False), (2**31, False), (True, False),
                                       ("4", False), (4.0, False)])
def test_pr_number(value, ok):
    assert (hygiene.pr_number(value) is not None) == ok


def test_versions_and_free_text():
    assert hygiene.input_version("a" * 40) and not hygiene.input_version("a b") and not hygiene.input_version("../x")
    assert hygiene.free_text("a reason, with ü", 500) and not hygiene.free_text("   ", 500)
    assert not hygiene.free_text("a\x00", 500) and hygiene.printable("a\x00\u202eb", 10) == "a??b"


def test_the_manual_model_names_fields_and_never_quotes_them():
    with pytest.raises(ValueError) as info:
        parse_manual_body(b'{"repository": "../etc", "number": 1e40, "reason": "x\\u0000", "sneaky": "payload"}')
    message = str(info.value)
    assert all(f in message for f in ("repository", "number", "reason", "an unexpected field"))
    assert "etc" not in message and "sneaky" not in message and "payload" not in message
    with pytest.raises(ValidationError) as err:
        ManualTrigger.model_validate({"repository": "acme/api", "number": 1, "reason": "r", "request_id": ".."})
    assert problems(err.value).startswith("request_id (")


def test_the_ascii_fast_path_refuses_exactly_the_control_category():
    import unicodedata

    from intake.hygiene import _REFUSED_CATEGORIES, has_control
    for code in range(128):
        ch = chr(code)
        assert has_control(f"id-{ch}-x") == (unicodedata.category(ch) in _REFUSED_CATEGORIES), code
    assert has_control("d\u202eevil") and has_control("zero\u200bwidth") and not has_control("caf\u00e9")
