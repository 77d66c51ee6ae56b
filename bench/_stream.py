"""A reproducible mixed stream of GitHub ``pull_request`` deliveries (pure: no I/O).

Three kinds, drawn with the configured weights from a seeded RNG:

* **new** -- a new delivery for a pull request at a head never delivered before: a
  pull request opened (``opened``), a push to an open one (the forge head is moved first,
  ``synchronize``), or the current head of one whose head an earlier *stale* item moved
  without delivering it (``synchronize``). Expected: ``accept/admitted``.
* **redeliver** -- an exact re-send of an earlier original delivery (same body, same
  signature, same ``X-GitHub-Delivery``). Expected: ``reject/duplicate-delivery``.
* **stale** -- the forge head of an opened pull request is moved to a new sha first,
  then a new delivery arrives for one of its older shas (sometimes one that was admitted
  before, sometimes one that was never delivered). Expected: ``reject/stale-version``.

When a kind is impossible at that point (nothing to redeliver yet, no opened pull
request to move), a *new* item is drawn instead; the realised mix is reported.

Ordering: items are sent with a pool of concurrent senders, so an item that moves a
pull request's head (stale, push) must not race earlier items of the same pull request
(a *new* delivery still in flight would turn stale). Each item therefore carries
``deps``: an item that moves a head waits for every earlier item of its pull request;
any other item waits only for the last head move of its pull request. Items of
different pull requests, and a redelivery and its original within one head epoch,
run fully concurrently.
"""

from __future__ import annotations

import random
import uuid

from bench._stream_items import EXPECTED, KINDS, P_DELIVER_MOVED_HEAD, P_PUSH, REPOS, Item, Pull, Stream, sha_for

__all__ = ["EXPECTED", "KINDS", "Item", "Pull", "Stream", "build_stream"]


def build_stream(n: int, weights: dict[str, float], seed: int) -> Stream:
    """``n`` deliveries; ``weights`` over KINDS (need not sum to 1)."""
    if n < 1:
        raise ValueError("need at least one delivery")
    total = sum(max(0.0, weights.get(k, 0.0)) for k in KINDS)
    if total <= 0:
        raise ValueError("at least one of --new/--redeliver/--stale must be positive")
    rng = random.Random(seed)
    kinds, cum = list(KINDS), []
    acc = 0.0
    for k in kinds:
        acc += max(0.0, weights.get(k, 0.0)) / total
        cum.append(acc)

    pulls: list[Pull] = []
    next_number = {r: 1 for r in REPOS}
    items: list[Item] = []
    originals: list[int] = []

    def did() -> str:
        return str(uuid.UUID(int=rng.getrandbits(128), version=4))

    def new_pull() -> Pull:
        owner, repo = rng.choice(REPOS)
        number = next_number[(owner, repo)]
        next_number[(owner, repo)] += 1
        pull = Pull(owner, repo, number, [sha_for(seed, owner, repo, number, 0)])
        pulls.append(pull)
        return pull

    def add(kind: str, how: str, pull: Pull, sha: str, action: str, delivery_id: str, *,
            move_to: str | None = None, origin: int | None = None) -> None:
        items.append(Item(len(items), kind, how, pull.owner, pull.repo, pull.number, sha, action, delivery_id,
                          move_to=move_to, origin=origin))

    for _ in range(n):
        r = rng.random()
        kind = next(k for k, c in zip(kinds, cum, strict=True) if r < c or c == cum[-1])
        opened = [p for p in pulls if p.opened]
        if kind == "redeliver" and originals:
            origin = items[rng.choice(originals)]
            pull = next(p for p in pulls if p.pr == origin.pr)
            add("redeliver", "redelivery", pull, origin.sha, origin.action, origin.delivery_id, origin=origin.index)
            continue
        if kind == "stale" and opened:
            pull = rng.choice(opened)
            old = rng.choice(pull.heads)
            how = "stale-admitted" if old in pull.delivered else "stale-unseen"
            pull.heads.append(sha_for(seed, pull.owner, pull.repo, pull.number, len(pull.heads)))
            originals.append(len(items))
            add("stale", how, pull, old, "synchronize", did(), move_to=pull.heads[-1])
            continue
        # new (also the fallback when the drawn kind is impossible yet)
        moved = [p for p in opened if p.heads[-1] not in p.delivered]
        r = rng.random()
        if moved and r < P_DELIVER_MOVED_HEAD:
            pull, how, action, move_to = rng.choice(moved), "moved-head", "synchronize", None
        elif opened and P_DELIVER_MOVED_HEAD <= r < P_DELIVER_MOVED_HEAD + P_PUSH:
            pull, how, action = rng.choice(opened), "push", "synchronize"
            pull.heads.append(sha_for(seed, pull.owner, pull.repo, pull.number, len(pull.heads)))
            move_to = pull.heads[-1]
        else:
            pull, how, action, move_to = new_pull(), "opened", "opened", None
            pull.opened = True
        pull.delivered.add(pull.heads[-1])
        originals.append(len(items))
        add("new", how, pull, pull.heads[-1], action, did(), move_to=move_to)

    _link(items)
    news = [(i.work_key, i.sha) for i in items if i.kind == "new"]
    assert len(news) == len(set(news)), "generator bug: a (work key, head) delivered as new twice"
    return Stream(seed, items, pulls)


def _link(items: list[Item]) -> None:
    """Fill ``deps`` (see the module docstring): per pull request, head moves are barriers."""
    barrier: dict[tuple, int] = {}
    since: dict[tuple, list[int]] = {}
    for it in items:
        last = barrier.get(it.pr)
        if it.move_to is not None:
            it.deps = tuple(since.get(it.pr, [])) + ((last,) if last is not None else ())
            barrier[it.pr], since[it.pr] = it.index, []
        else:
            it.deps = (last,) if last is not None else ()
            since.setdefault(it.pr, []).append(it.index)
