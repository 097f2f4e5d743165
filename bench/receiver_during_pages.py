"""Webhook acknowledgements with nobody on the staff page vs while staff page through it, side by side in one
run against one `serve --admin-ui`-like uvicorn process (``synctool.web.receiver:app_from_env`` with
``receiver: {admin_ui: true}``: the receiver and the staff page are one app, one process). Goal: the
acknowledgements keep their p99 while the page is used.

The sync log is seeded with ROWS records (``bench/staff_page.py``'s ``prepare``). Signed Square deliveries
(``bench/receiver.py``'s ``request_bytes``, key and notification URL) arrive at a steady giving-day RATE from
CONNECTIONS keep-alive connections, each on its own schedule: for SECONDS with nobody on the page (after one
uncounted second), then for SECONDS more while STAFF signed-in clients page through the overview, the sync log,
text searches with a new word each time, filtered lists, later pages, a record and the failed list, reading
each page in full. Each client is its own process (the load generator shares no interpreter with it) and
pauses THINK_MS between pages (0, the default: the next page as soon as one is read, far more than a person
clicks). No page is asked before that phase, so its first-time costs land in it.

An acknowledgement's time runs from when the delivery was due: a delivery held back on its connection by a
slow answer before it waits that long too, as a platform's would.

    python bench/receiver_during_pages.py [--rows 100000] [--seconds 20] [--rate 30] [--connections 3] [--staff 2]
                                          [--think-ms 0]
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import shutil
import statistics
import sys
import time
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import httpx  # noqa: E402
from receiver import KEY, URL, read_response, request_bytes  # noqa: E402
from serving import percentile, start, stop  # noqa: E402
from staff_page import APP, pages, prepare, signed_in  # noqa: E402
from synclog import SOURCES  # noqa: E402

from synctool.fakes import samples  # noqa: E402

#: what the staff clients open, from bench/staff_page.py's pages (the text search's word changes each visit)
TOUR = (
    "overview",
    "sync log",
    "sync log, text search",
    "sync log, status + source + dates",
    "sync log, page 100",
    "a record",
    "failed",
)
FILTERS = (("failed", "7d"), ("succeeded", "2d"), ("skipped", "14d"), ("queued", "30d"), ("resolved", ""))


def tour(who: int, n: int, records: list[str]) -> list[tuple[str, str]]:
    """Staff client ``who``'s ``n``-th pass through the pages: every varying part changes from pass to pass."""
    visit = who * 100_000 + n
    named = pages(records[visit % len(records)], visit)
    status, since = FILTERS[visit % len(FILTERS)]
    filtered = urlencode({"status": status, "source": SOURCES[(visit // len(FILTERS)) % len(SOURCES)], "date_from": since})
    return [(name, named[name]) for name in TOUR] + [
        ("sync log, another filter", f"/admin/syncs?{filtered}"),
        ("sync log, a later page", f"/admin/syncs?page={2 + visit % 400}"),
    ]


def staff_client(base_url: str, cookies: dict, who: int, records: list[str], think: float, go, done, out) -> None:
    """One signed-in person paging through the staff page from ``go`` until ``done``, ``think`` seconds between
    pages; puts its pages on ``out`` as (name, started, finished, ms, status) with monotonic clock times, which
    every process shares."""
    out.put(("ready", who))
    go.wait()
    served = []
    with httpx.Client(base_url=base_url, timeout=120, cookies=cookies) as client:
        n = 0
        while not done.is_set():
            for name, path in tour(who, n, records):
                if done.is_set():
                    break
                started = time.monotonic()
                answer = client.get(path)
                answer.read()
                finished = time.monotonic()
                served.append((name, started, finished, (finished - started) * 1000, answer.status_code))
                done.wait(think)
            n += 1
    out.put(("pages", served))


async def deliver(port: int, seconds: float, rate: float, connections: int, tag: str) -> list[tuple[float, float, int]]:
    """Signed deliveries at ``rate`` a second in all, spread over ``connections`` keep-alive connections on staggered
    schedules; each is (due, ms, status). Measured from the send when the connection was idle at the due time,
    else from the due time (the wait behind the previous answer counts)."""
    interval = connections / rate
    count = max(1, int(seconds / interval))
    payloads = [
        [request_bytes(port, samples.square_order_event(f"{tag}-{c}-{i}", event_id=f"{tag}-{c}-{i}")) for i in range(count)]
        for c in range(connections)
    ]  # signed before the clock starts
    acks: list[tuple[float, float, int]] = []
    begin = time.monotonic() + 0.05

    async def connection(c: int) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        for i in range(count):
            due = begin + (i + c / connections) * interval
            late = time.monotonic() >= due
            if not late:
                await asyncio.sleep(due - time.monotonic())
            sent = due if late else time.monotonic()
            writer.write(payloads[c][i])
            status = await read_response(reader)
            acks.append((due, (time.monotonic() - sent) * 1000, status))
        writer.close()

    await asyncio.gather(*(connection(c) for c in range(connections)))
    return acks


def summary(ms: list[float]) -> tuple[float, float, float]:
    return statistics.median(ms), percentile(ms, 0.99), max(ms)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--rate", type=float, default=30, help="deliveries a second, in all")
    parser.add_argument("--connections", type=int, default=3)
    parser.add_argument("--staff", type=int, default=2, help="signed-in staff clients paging at once")
    parser.add_argument("--think-ms", type=float, default=0, help="a staff client's pause between pages (0: at once)")
    args = parser.parse_args()

    print(f"seeding {args.rows:,} sync records ...", flush=True)
    site = prepare(
        args.rows,
        {"POS_WEBHOOK_SIGNATURE_KEY": KEY, "POS_WEBHOOK_NOTIFICATION_URL": URL},
        prefix="synctool-bench-during-pages-",
    )
    print(f"seeded {args.rows:,} sync records in {site.seed_seconds:.1f} s", flush=True)

    ctx = multiprocessing.get_context("spawn")
    go, done, out = ctx.Event(), ctx.Event(), ctx.Queue()
    proc = start(APP, site.port, site.env)
    clients = []
    try:
        cookies = signed_in(site)
        clients = [
            ctx.Process(
                target=staff_client, args=(site.base_url, cookies, who, site.failed_ids, args.think_ms / 1000, go, done, out)
            )
            for who in range(args.staff)
        ]
        for client in clients:
            client.start()
        for _ in clients:
            assert out.get(timeout=60)[0] == "ready"

        asyncio.run(deliver(site.port, 1.0, args.rate, args.connections, "warm"))  # the receiver's first connection
        idle = asyncio.run(deliver(site.port, args.seconds, args.rate, args.connections, "idle"))
        go.set()
        busy = asyncio.run(deliver(site.port, args.seconds, args.rate, args.connections, "busy"))
        window = (min(a[0] for a in busy), max(a[0] + a[1] / 1000 for a in busy))
        done.set()
        served = []
        for _ in clients:
            kind, found = out.get(timeout=300)
            assert kind == "pages"
            served += found
        for client in clients:
            client.join()
    finally:
        done.set()
        go.set()
        for client in clients:
            if client.is_alive():
                client.terminate()
        stop(proc)
        shutil.rmtree(site.folder, ignore_errors=True)

    for phase, acks in (("idle", idle), ("busy", busy)):
        wrong = {s for _, _, s in acks if s != 200}
        assert not wrong, f"{phase}: statuses {wrong}"
    meanwhile = [p for p in served if window[0] <= p[2] <= window[1]]
    bad_pages = [p for p in served if p[4] != 200]

    print(
        f"{args.rows:,} sync records, one uvicorn process (receiver + staff page); {args.rate:g} signed deliveries/s"
        f" from {args.connections} connections, {args.seconds:g} s per phase; staff think {args.think_ms:g} ms between pages"
    )
    print(f"{'acknowledgements (ms)':<44}{'count':>7}{'p50':>8}{'p99':>8}{'max':>8}")
    idle_ms, busy_ms = [a[1] for a in idle], [a[1] for a in busy]
    for label, ms in (("nobody on the staff page", idle_ms), (f"{args.staff} staff client(s) paging", busy_ms)):
        p50, p99, top = summary(ms)
        print(f"{label:<44}{len(ms):>7}{p50:>8.1f}{p99:>8.1f}{top:>8.1f}")
    ratio = percentile(busy_ms, 0.99) / percentile(idle_ms, 0.99)
    print(f"p99 while paging / p99 idle: {ratio:.2f}x")
    for limit in (50, 100, 250):
        over = sum(1 for ms in busy_ms if ms > limit), sum(1 for ms in idle_ms if ms > limit)
        print(f"  acknowledgements over {limit} ms: {over[1]} idle, {over[0]} while paging")

    print(f"pages served meanwhile: {len(meanwhile)} ({len(meanwhile) / (window[1] - window[0]):.1f}/s)" + (
        f", {len(bad_pages)} not 200: {sorted({p[4] for p in bad_pages})}" if bad_pages else ", every one 200"))  # fmt: skip
    print(f"{'page, while deliveries arrive (ms)':<44}{'count':>7}{'p50':>8}{'p95':>8}{'max':>8}  first")
    names = list(dict.fromkeys(p[0] for p in sorted(served, key=lambda p: p[1])))
    for name in names:
        ms = [p[3] for p in served if p[0] == name]
        first = min((p for p in served if p[0] == name), key=lambda p: p[1])[3]
        print(f"{name:<44}{len(ms):>7}{statistics.median(ms):>8.1f}{percentile(ms, 0.95):>8.1f}{max(ms):>8.1f}  {first:.1f}")

    slowest = max(busy, key=lambda a: a[1])
    during = [p for p in served if p[1] <= slowest[0] + slowest[1] / 1000 and p[2] >= slowest[0]]
    print(
        f"slowest acknowledgement while paging: {slowest[1]:.1f} ms, {slowest[0] - window[0]:.1f} s into the phase;"
        " pages in flight then: " + (", ".join(f"{p[0]} ({p[3]:.0f} ms)" for p in during) or "none")
    )


if __name__ == "__main__":
    main()
