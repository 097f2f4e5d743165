"""Take the screenshots in docs/staff-page.md: a site against the fakes with a few days' gifts, a failure, a
reconcile difference and a team, served by the real `synctool serve --admin-ui`, photographed by headless
Chromium at desktop width and at a phone's 390 px.

    python docs/screenshots.py        (needs Debian's chromium and chromium-driver, as the browser tests do)
"""

from __future__ import annotations

import copy
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from synctool.fakes import samples  # noqa: E402
from synctool.fakes.world import WEBHOOK_SECRETS, FakeWorld  # noqa: E402
from tests.drills.conftest import Site, coded  # noqa: E402
from tests.drills.test_staff_page_browser import browser, failed_job, go, printed_link  # noqa: E402
from tests.helpers import free_port  # noqa: E402

OUT = ROOT / "docs" / "staff-page"
DONORS = ("ana", "ben", "chloe", "dev", "eva", "femi")


def main() -> None:
    from selenium.webdriver.common.by import By

    OUT.mkdir(exist_ok=True)
    with FakeWorld(crm_limit=100_000, crm_window_s=1.0, serve=True) as world:
        site = coded(Site(Path(tempfile.mkdtemp(prefix="synctool-shots-")), world))
        site.port = free_port()
        (site.folder / "config.yaml").write_text(f"receiver: {{public_url: '{site.url}'}}\nqueue: {{max_attempts: 1}}\n")
        for email, role in (("dd@example.org", "viewer"), ("ops@example.org", "admin"), ("vol@example.org", "super_admin")):
            site.run("users", "invite", email, "--role", role)
        site.serve(args=("--admin-ui",))
        try:
            for n, donor in enumerate(DONORS, start=1):
                site.give(n, email=f"{donor}@example.org")
            site.run("drain", "--max-seconds", "20")
            failed_job(site)
            lost = copy.deepcopy(samples.GIVEBUTTER_TRANSACTION)
            today = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime())
            lost.update(id="GT-4471", amount=75, transacted_at=today, created_at=today, email="lost@example.org",
                        transactions=[{**lost["transactions"][0], "amount": 75}])  # fmt: skip
            world.givebutter.add_transaction(lost)
            site.run("reconcile", "--from", "2d", "--source", "donations")
            # a known donor under a new e-mail, held for review (donors.matching: review)
            world.crm.create_constituent({"first_name": "Robert", "last_name": "Smith", "email_addresses": [{"address": "robert@work.org"}],
                                          "street_addresses": [{"street": "12 Analytical Way", "city": "Oakland", "postal_code": "94607"}]})  # fmt: skip
            site.run("crm", "mirror", "--refresh")
            bob = copy.deepcopy(samples.GIVEBUTTER_TRANSACTION)
            bob.update(
                id="GT-5120",
                first_name="Bob",
                last_name="Smith",
                email="bob.smith@gmail.com",
                transacted_at=today,
                created_at=today,
            )
            site.post(
                None,
                "donations",
                samples.givebutter("transaction.succeeded", bob),
                {"Signature": WEBHOOK_SECRETS["DONATIONS_WEBHOOK_SECRET"]},
            )
            site.run("drain", "--max-seconds", "20")
            site.run("year-end", "check", "--quiet")

            desk = browser(phone=False)
            desk.get(f"{site.url}/admin/")
            desk.save_screenshot(str(OUT / "sign-in.png"))
            desk.get(printed_link(site, "vol@example.org"))
            go(desk, desk.find_element(By.XPATH, "//button[normalize-space()='Sign in']"))
            for name, path in (("overview", "/admin/"), ("sync-log", "/admin/syncs"), ("failed", "/admin/failed"),
                               ("reconcile", "/admin/reconcile"), ("donors", "/admin/donors"),
                               ("payouts", "/admin/payouts?from=30d&run=1"), ("year-end", "/admin/year-end"), ("team", "/admin/team"),
                               ("mappings", "/admin/mappings"), ("settings", "/admin/settings"), ("actions", "/admin/actions")):  # fmt: skip
                desk.get(site.url + path)
                desk.set_window_size(1280, max(700, desk.execute_script("return document.body.scrollHeight") + 120))
                desk.save_screenshot(str(OUT / f"{name}.png"))
            desk.get(site.url + "/admin/syncs")
            go(desk, desk.find_element(By.CSS_SELECTOR, "main tbody a"))
            desk.save_screenshot(str(OUT / "record.png"))
            desk.quit()

            phone = browser(phone=True)
            phone.get(printed_link(site, "dd@example.org"))
            go(phone, phone.find_element(By.XPATH, "//button[normalize-space()='Sign in']"))
            phone.save_screenshot(str(OUT / "phone-overview.png"))
            phone.get(site.url + "/admin/syncs")
            phone.save_screenshot(str(OUT / "phone-sync-log.png"))
            phone.quit()
        finally:
            site.stop()
    print(f"screenshots in {OUT}")


if __name__ == "__main__":
    main()
