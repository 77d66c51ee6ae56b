"""The console's pure rules: who sees and acts, sessions, input bounds, chart arithmetic, the key setting."""

from __future__ import annotations

import pytest
from itsdangerous import URLSafeTimedSerializer

from console._access import viewer_for
from console._charts import bar_chart, gauge, hourly_columns, nice_ceiling
from console._forms import decode_cursor, encode_cursor, safe_next
from console._session import SessionSigner, _loads
from sluicegate.config.settings import ConfigError, DEFAULT_CONFIG_FILE, load_settings
from sluicegate.config.dev_guard import published_in_use, refuse_published_secrets
from sluicegate.operations.actions import kill_target, retry_trigger

CONFIGURED = {"acme", "beta"}


def test_roles_are_per_tenant_and_star_is_platform_wide():
    dana = viewer_for("dana", {"acme": "operator", "beta": "admin"}, CONFIGURED, "c")
    assert dana.visible == {"acme", "beta"} and dana.sees("acme") and not dana.sees(None)
    assert (dana.admin_in("acme"), dana.admin_in("beta"), dana.admin_in(None)) == (False, True, False)
    alice = viewer_for("alice", {"acme": "operator", "gone": "admin"}, CONFIGURED, "c")
    assert alice.visible == {"acme"} and not alice.sees("gone") and alice.admin_anywhere is False
    root = viewer_for("root", {"*": "operator", "beta": "admin"}, CONFIGURED, "c")
    assert root.visible is None and root.sees(None) and root.tenants == ["acme", "beta"]
    assert (root.admin_in("beta"), root.admin_in("acme"), root.admin_in(None)) == (True, False, False)


def _settings(**env: str):
    return load_settings(DEFAULT_CONFIG_FILE, env={"SLUICEGATE_DEV_MODE": "1", **env})


def test_a_session_names_its_actor_until_the_token_or_the_key_changes():
    settings = _settings()
    signer = SessionSigner(settings.console)
    cookie, session = signer.issue("carol", "dev-admin-token-carol")
    assert signer.read(cookie, settings.actors) == session
    assert signer.read(cookie[:-2] + ("AA" if not cookie.endswith("AA") else "BB"), settings.actors) is None
    rotated = _settings(SLUICEGATE__ACTORS__CAROL='{"token": "a-brand-new-token-for-carol", "tenants": {"acme": "admin"}}')
    assert SessionSigner(rotated.console).read(cookie, rotated.actors) is None  # a rotated token ends its sessions
    gone = _settings(SLUICEGATE__ACTORS='{"alice": {"token": "dev-operator-token-alice", "tenants": {"acme": "operator"}}}')
    assert SessionSigner(gone.console).read(cookie, gone.actors) is None  # an actor removed from the config
    new_key = "k" * 40
    rekeyed = _settings(SLUICEGATE_CONSOLE_SESSION_KEY=new_key)
    assert SessionSigner(rekeyed.console).read(cookie, rekeyed.actors) is None
    old = settings.console.session_key.get_secret_value()
    keeping = _settings(SLUICEGATE_CONSOLE_SESSION_KEY=new_key, SLUICEGATE__CONSOLE__SESSION_OLD_KEYS=f'["{old}"]')
    assert SessionSigner(keeping.console).read(cookie, keeping.actors) == session  # retired key still verifies
    serializer = URLSafeTimedSerializer([old.encode()], salt="sluicegate.console.session")
    assert _loads(serializer, cookie, max_age=-1) is None  # expired


def test_session_key_is_long_and_the_published_one_only_serves_dev_mode_on_loopback():
    with pytest.raises(ConfigError, match="console.session_key: .*at least 32"):
        _settings(SLUICEGATE_CONSOLE_SESSION_KEY="short-key-of-31-characters-xxxx")
    dev = _settings()
    assert "console.session_key" in published_in_use(dev)
    prod = load_settings(DEFAULT_CONFIG_FILE, env={})
    with pytest.raises(ConfigError, match=r"console\.session_key \(SLUICEGATE_CONSOLE_SESSION_KEY\)"):
        refuse_published_secrets(prod, "api", "127.0.0.1")


def test_sign_in_goes_back_only_to_console_paths_and_cursors_round_trip():
    for bad in ("https://evil.example/", "//evil.example/console", "/console/../x\\y", "/elsewhere", None,
                "/console/\x00", "/console" + "a" * 600):
        assert safe_next(bad) == "/console/"
    assert safe_next("/console/receipts?outcome=accept") == "/console/receipts?outcome=accept"
    errors: list[str] = []
    cursor = decode_cursor("2026-01-02T03:04:05.123456+00:00~abc", errors)
    assert cursor is not None and decode_cursor(encode_cursor(cursor), errors) == cursor and errors == []
    assert decode_cursor("nonsense", errors) is None and errors


def test_charts_are_proportional_to_the_counts():
    chart = bar_chart([("reject", "stale-version", 5), ("accept", "admitted", 10), ("defer", "quota", 1)])
    assert [(b.outcome, b.count) for b in chart.bars] == [("accept", 10), ("defer", 1), ("reject", 5)]
    assert chart.bars[2].width == pytest.approx(chart.bars[0].width / 2) and chart.total == 16
    hours = ["2026-01-01 10", "2026-01-01 11", "2026-01-01 12"]
    columns = hourly_columns([(hours[0], "accept", 3), (hours[0], "reject", 1), (hours[2], "defer", 7)], hours)
    first = [s for s in columns.segments if s.hour == hours[0]]
    assert sum(s.height for s in first) == pytest.approx(columns.segments[-1].height * 4 / 7)
    assert columns.ticks[-1].value == nice_ceiling(7) == 10 and columns.total == 11
    assert [nice_ceiling(n) for n in (0, 1, 3, 11, 20, 21, 501)] == [1, 1, 5, 20, 20, 50, 1000]
    g = gauge(3.0, 10.0, held=1.0, width=100)
    assert (g.used, g.held, g.percent, g.over) == (30.0, 10.0, 40.0, False)
    assert gauge(12, 10).over and gauge(5, None).percent is None


def test_kill_targets_and_retries_are_validated_before_anything_is_built():
    assert kill_target("all", "ignored") == "*"
    assert kill_target("tenant", "acme") == "acme"
    for scope, target in (("tenant", 'acme" OR x = "y'), ("work_key", "github:acme/api#1:review"),
                          ("work_key", None), ("everything", "acme")):
        with pytest.raises(ValueError):
            kill_target(scope, target)

    class Letter:
        id, work_key, tenant, source, input_version = "L1", "beta/github:shared/app#5:review", "beta", "beta", "cd" * 20

    trigger = retry_trigger(Letter, "provider fixed")
    assert (trigger.tenant, trigger.repository, trigger.number, trigger.input_version) == (
        "beta", "shared/app", 5, "cd" * 20)
    assert trigger.reason.startswith("dlq retry L1 (first from beta): provider fixed") and not trigger.force


@pytest.mark.parametrize("value", ["kill\u202eit", "line\u2028break", "tab\there", "nul\x00"])
def test_a_form_field_with_a_control_format_or_separator_character_is_refused(value):
    """Found by an adversarial review (session 17): the console refused ASCII controls only, so bidi
    overrides and U+2028 reached kill reasons and dead-letter notes (and the log lines quoting them)."""
    from console._forms import FormRefused, text

    with pytest.raises(FormRefused):
        text({"reason": value}, "reason", 200)
    assert text({"reason": "plain reason, ünïcode ok"}, "reason", 200) == "plain reason, ünïcode ok"


@pytest.mark.parametrize("value", ["a\x00b", "x\u202ey", "line\nbreak"])
def test_a_replay_reason_is_held_to_the_rules_of_every_other_reason(value):
    """Found by the same review: the replay endpoint's reason was a plain string (a NUL failed the
    receipt insert on PostgreSQL after the decision, a 500)."""
    import json

    from intake.replay_request import parse_replay_body

    with pytest.raises(ValueError, match="reason"):
        parse_replay_body(json.dumps({"delivery_id": "d-1", "reason": value}).encode())
    assert parse_replay_body(b'{"delivery_id": "d-1", "reason": "replaying after the fix"}').reason == \
        "replaying after the fix"


def test_a_cookie_without_secure_serves_only_dev_mode_on_loopback():
    """Found by an adversarial review (session 17): ``console.secure_cookie: false`` was documented as
    for plain HTTP on loopback only, but nothing held it there."""
    from sluicegate.config.dev_guard import refuse_insecure_cookie

    dev = _settings()  # the dev file: secure_cookie false, dev mode
    assert dev.console.secure_cookie is False
    refuse_insecure_cookie(dev, "127.0.0.1")  # the dev stack: allowed
    with pytest.raises(ConfigError, match=r"console\.secure_cookie is false"):
        refuse_insecure_cookie(dev, "0.0.0.0")
    prod = load_settings(DEFAULT_CONFIG_FILE, env={})
    with pytest.raises(ConfigError, match="outside dev mode on loopback"):
        refuse_insecure_cookie(prod, "127.0.0.1")
    secure = load_settings(DEFAULT_CONFIG_FILE, env={"SLUICEGATE__CONSOLE__SECURE_COOKIE": "true"})
    refuse_insecure_cookie(secure, "0.0.0.0")  # Secure cookies: anywhere
