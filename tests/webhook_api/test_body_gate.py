"""The body-read gate's counting: slots per source and per client address (an IPv6 client by its /64),
given back on every way out of the block."""

from __future__ import annotations

import pytest

from webhook_api._body import BodyReadGate


def test_one_address_holds_at_most_its_share_and_gives_it_back():
    gate = BodyReadGate(4, per_client=2)
    with gate.slot("203.0.113.7") as a, gate.slot("203.0.113.7") as b, gate.slot("203.0.113.7") as c:
        assert (a, b, c) == (True, True, False)
        with gate.slot("198.51.100.1") as other:
            assert other
    with pytest.raises(RuntimeError), gate.slot("203.0.113.7") as again:  # an error in the block frees it too
        assert again
        raise RuntimeError("read failed")
    with gate.slot("203.0.113.7") as a, gate.slot("203.0.113.7") as b:
        assert (a, b) == (True, True)


def test_an_ipv6_client_counts_by_its_64():
    """One host holds a whole /64: counting each address alone would not cap it at all."""
    gate = BodyReadGate(8, per_client=2)
    with gate.slot("2001:db8:1:2::1") as a, gate.slot("2001:db8:1:2::ffff") as b, \
            gate.slot("2001:db8:1:2:aaaa::9") as c, gate.slot("2001:db8:1:3::1") as other:
        assert (a, b, c, other) == (True, True, False, True)


def test_the_source_cap_holds_whatever_the_addresses():
    gate = BodyReadGate(2, per_client=None)
    with gate.slot("192.0.2.1") as a, gate.slot("192.0.2.2") as b, gate.slot("192.0.2.3") as c:
        assert (a, b, c) == (True, True, False)


def test_an_ipv4_mapped_client_counts_as_its_ipv4_address():
    """Found by a review: an IPv4-mapped address fell into ``::/64``, one share for every IPv4 client
    of a dual-stack listener."""
    gate = BodyReadGate(8, per_client=1)
    with gate.slot("::ffff:203.0.113.7") as a, gate.slot("::ffff:198.51.100.1") as b, \
            gate.slot("203.0.113.7") as same, gate.slot("::1") as loop:
        assert (a, b, same, loop) == (True, True, False, True)
