"""The staff page in a real browser: Debian's headless Chromium, driven through its chromedriver by selenium,
against the real `synctool serve --admin-ui` process. A viewer signs in from an e-mailed link on a phone
(390 px, no sideways scrolling) and sees the day's gifts, filters the sync log, and has a forged action
refused; an admin retries a failed job and accepts a reconcile difference; a form posted from another origin
is refused for want of the session's CSRF token.

`.ci/run` installs the ``chromium`` and ``chromium-driver`` packages; where they are absent these tests skip.
"""

from __future__ import annotations

import copy
import http.server
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from synctool.fakes import samples
from tests.drills.conftest import Site, crm_fault

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
PHONE = {"deviceMetrics": {"width": 390, "height": 844, "pixelRatio": 2}}

pytestmark = [
    pytest.mark.skipif(
        not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()),
        reason="Debian's chromium and chromium-driver are not installed (.ci/run installs them)",
    ),
    # what a browser sees of the staff page (roles, CSRF, the phone's layout) owes nothing to the engine, and each of
    # these takes half a minute of the drill leg's three: the pages' data on PostgreSQL is the fast suite's
    pytest.mark.sqlite_only(reason="a browser's view of the staff page is the same on either engine"),
]


def browser(phone: bool = True) -> Any:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    # the machine's network is closed: without these Chromium keeps trying Google's hosts
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 f"--user-data-dir={tempfile.mkdtemp(prefix='synctool-chromium-')}"):  # fmt: skip
        options.add_argument(flag)
    if phone:
        options.add_experimental_option("mobileEmulation", PHONE)
    else:
        options.add_argument("--window-size=1280,900")
    driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
    driver.implicitly_wait(5)
    return driver


@pytest.fixture
def chromium() -> Iterator[Any]:
    made: list[Any] = []

    def start(phone: bool = True) -> Any:
        made.append(browser(phone))
        return made[-1]

    yield start
    for driver in made:
        user_data = next(
            (
                a.split("=", 1)[1]
                for a in driver.capabilities.get("goog:chromeOptions", {}).get("args", [])
                if a.startswith("--user-data-dir")
            ),
            None,
        )
        driver.quit()
        if user_data:
            shutil.rmtree(user_data, ignore_errors=True)


@pytest.fixture
def staff_site(coded_site: Site) -> Iterator[tuple[Site, Any]]:
    """A site serving the staff page, its mail going to a sink, with a viewer, an admin and a super_admin."""
    from tests.helpers import free_port
    from tests.test_admin import SmtpSink

    sink = SmtpSink()
    site = coded_site
    site.port = free_port()
    (site.folder / "config.yaml").write_text(
        f"receiver: {{public_url: '{site.url}'}}\n"
        f"smtp: {{host: 127.0.0.1, port: {sink.server_address[1]}, security: none}}\n"
        "queue: {max_attempts: 1}\n"
    )
    for role in ("viewer", "admin", "super_admin"):
        assert site.run("users", "invite", f"{role}@example.org", "--role", role).returncode == 0
    site.serve(args=("--admin-ui",))
    yield site, sink
    sink.shutdown()


def go(driver: Any, element: Any) -> None:
    """Click something that loads a page, and wait until the new page is there."""
    leaving(driver)
    element.click()
    arrived(driver)


def leaving(driver: Any) -> None:
    # Marking the old document, not holding one of its elements: Chromium can answer a question about an element
    # of a page it is leaving with a bare "unknown error" rather than a stale-element one, which failed a CI run.
    driver.execute_script("window.synctoolOldPage = true")


def arrived(driver: Any) -> None:
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.support.ui import WebDriverWait

    def loaded(d: Any) -> bool:
        try:
            return bool(d.execute_script("return !window.synctoolOldPage && document.readyState === 'complete'"))
        except WebDriverException:  # between two documents
            return False

    WebDriverWait(driver, 10).until(loaded)


def no_sideways_scroll(driver: Any) -> None:
    width, scroll = driver.execute_script("return [window.innerWidth, document.documentElement.scrollWidth]")
    assert scroll <= width, f"{driver.current_url} scrolls sideways: {scroll} px in a {width} px window"


def sign_in_by_link(driver: Any, url: str) -> None:
    from selenium.webdriver.common.by import By

    driver.get(url)
    go(driver, driver.find_element(By.XPATH, "//button[normalize-space()='Sign in']"))
    assert driver.find_element(By.TAG_NAME, "h1").text == "Overview"


def printed_link(site: Site, email: str) -> str:
    out = site.run("users", "login-link", email)
    assert out.returncode == 0, out.stderr
    return out.stdout.split()[0]


def drained(site: Site) -> dict[str, int]:
    assert site.run("drain", "--max-seconds", "20").returncode in (0, 1)
    return site.statuses()


def failed_job(site: Site) -> str:
    """A gift the CRM refuses with 500s until its one attempt fails."""
    crm_fault(site.world, "500", count=1000, method="POST", path="/gifts")
    site.give(900, email="refused@example.org")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        drained(site)
        found = site.rows("SELECT id FROM jobs WHERE status = 'failed'")
        if found:
            crm_fault(site.world, "500", count=0)
            return found[0][0]
    raise AssertionError(f"no job failed: {site.statuses()}")


def test_a_viewer_signs_in_from_an_emailed_link_on_a_phone_sees_the_days_gifts_and_a_forged_action_is_refused(
    staff_site, chromium
):
    from selenium.webdriver.common.by import By

    site, sink = staff_site
    for n in range(1, 4):
        assert site.give(n).status_code == 200
    assert drained(site) == {"succeeded": 3}
    job = failed_job(site)
    phone = chromium(phone=True)
    phone.get(f"{site.url}/admin/")
    assert phone.current_url.endswith("/admin/sign-in")  # signed out: to the sign-in page
    no_sideways_scroll(phone)
    phone.find_element(By.ID, "email").send_keys("viewer@example.org")
    go(phone, phone.find_element(By.XPATH, "//button[normalize-space()='Send me a link']"))
    assert "a sign-in link is on its way" in phone.find_element(By.TAG_NAME, "main").text
    assert not sink.messages  # the page only queued it: cron's drain sends it
    site.run("drain")
    deadline = time.monotonic() + 10
    while not sink.messages and time.monotonic() < deadline:
        time.sleep(0.05)
    link = re.search(r"http://\S+/admin/login/\S+", sink.messages[-1]).group(0)
    sign_in_by_link(phone, link)
    main = phone.find_element(By.TAG_NAME, "main").text
    assert "Last 24 hours" in main and "1 failed sync record(s) to retry or resolve" in main
    no_sideways_scroll(phone)
    go(phone, phone.find_element(By.LINK_TEXT, "Sync log"))
    rows = phone.find_elements(By.CSS_SELECTOR, "main tbody tr")
    assert len(rows) == 4 and sum("succeeded" in r.text for r in rows) == 3  # the day's gifts, and the refused one
    assert "Number2" in phone.find_element(By.TAG_NAME, "main").text
    no_sideways_scroll(phone)
    phone.find_element(By.ID, "q").send_keys("Number2")
    phone.find_element(By.ID, "status").send_keys("succeeded")
    go(phone, phone.find_element(By.XPATH, "//button[normalize-space()='Filter']"))
    assert "1 record(s)." in phone.find_element(By.TAG_NAME, "main").text
    go(phone, phone.find_element(By.CSS_SELECTOR, "main tbody a"))
    assert "Sync record" in phone.find_element(By.TAG_NAME, "h1").text and "Attempts" in phone.page_source
    no_sideways_scroll(phone)
    go(phone, phone.find_element(By.LINK_TEXT, "Failed"))
    assert "refused@example.org" in phone.page_source and not phone.find_elements(By.XPATH, "//button[normalize-space()='Retry']")
    no_sideways_scroll(phone)
    # the viewer forges the admin's form, with their own session's CSRF token: refused, and nothing changes
    leaving(phone)
    phone.execute_script(
        "const f = document.createElement('form'); f.method = 'post'; f.action = arguments[0];"
        "const t = document.createElement('input'); t.name = 'csrf'; t.value = document.querySelector('input[name=csrf]').value;"
        "f.appendChild(t); document.body.appendChild(f); f.submit();",
        f"{site.url}/admin/syncs/{job}/retry",
    )
    arrived(phone)
    assert phone.find_element(By.TAG_NAME, "h1").text == "Not for your role"
    assert site.rows("SELECT status FROM jobs WHERE id = ?", job) == [("failed",)]
    refused = site.rows("SELECT who, action, outcome FROM staff_actions WHERE target = ?", job)
    assert refused[0][:2] == ("viewer@example.org", "retry") and refused[0][2].startswith("refused (403)")


def test_an_admin_retries_a_failed_job_and_accepts_a_reconcile_difference(staff_site, chromium):
    from selenium.webdriver.common.by import By

    site, _ = staff_site
    job = failed_job(site)
    lost = copy.deepcopy(samples.GIVEBUTTER_TRANSACTION)  # money the platform took that never reached synctool
    today = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime())
    lost.update(id="LOST-1", amount=75, transacted_at=today, created_at=today, email="lost@example.org",
                transactions=[{**lost["transactions"][0], "amount": 75}])  # fmt: skip
    site.world.givebutter.add_transaction(lost)
    assert site.run("reconcile", "--from", "2d", "--source", "donations").returncode == 1
    desk = chromium(phone=False)
    sign_in_by_link(desk, printed_link(site, "admin@example.org"))
    go(desk, desk.find_element(By.LINK_TEXT, "Failed"))
    go(desk, desk.find_element(By.XPATH, "//button[normalize-space()='Retry']"))
    assert "is queued again" in desk.find_element(By.TAG_NAME, "main").text, desk.page_source
    assert site.rows("SELECT status FROM jobs WHERE id = ?", job) == [("queued",)]
    go(desk, desk.find_element(By.LINK_TEXT, "Reconcile"))
    row = desk.find_element(By.XPATH, "//tr[.//code[text()='donations_LOST-1']]")
    note = row.find_element(By.CSS_SELECTOR, "input[name=note]")
    label = desk.find_element(By.CSS_SELECTOR, f"label[for='{note.get_attribute('id')}']")
    assert label.text == "Why it is right"  # the control is labelled
    note.send_keys("a test gift, refunded outside the platform")
    go(desk, row.find_element(By.XPATH, ".//button[normalize-space()='Accept']"))
    assert "is accepted" in desk.find_element(By.CSS_SELECTOR, ".flash").text
    assert "accepted by admin@example.org" in desk.find_element(By.TAG_NAME, "main").text
    assert site.rows("SELECT accepted_by, note FROM reconcile_accepted") == [
        ("admin@example.org", "a test gift, refunded outside the platform")
    ]
    done = site.rows("SELECT who, action, outcome FROM staff_actions WHERE via = 'page' AND action != 'sign in' ORDER BY id")
    assert done == [("admin@example.org", "retry", "done"), ("admin@example.org", "accept difference", "done")]


def test_a_form_posted_from_another_origin_is_refused(staff_site, chromium, tmp_path):
    from selenium.webdriver.common.by import By

    site, _ = staff_site
    job = failed_job(site)
    (tmp_path / "evil").mkdir()
    (tmp_path / "evil" / "index.html").write_text(
        f'<form method="post" action="{site.url}/admin/syncs/{job}/retry"><button id="go">Win a prize</button></form>'
    )
    handler = lambda *a, **kw: http.server.SimpleHTTPRequestHandler(*a, directory=str(tmp_path / "evil"), **kw)  # noqa: E731
    evil = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=evil.serve_forever, daemon=True).start()
    try:
        desk = chromium(phone=False)
        sign_in_by_link(desk, printed_link(site, "admin@example.org"))  # the admin is signed in in this browser
        desk.get(f"http://127.0.0.1:{evil.server_address[1]}/")
        go(desk, desk.find_element(By.ID, "go"))
        assert "security token" in desk.find_element(By.TAG_NAME, "main").text
    finally:
        evil.shutdown()
    assert site.rows("SELECT status FROM jobs WHERE id = ?", job) == [("failed",)]


def shot(driver: Any, name: str) -> None:
    """A screenshot into ``$SYNCTOOL_SHOTS`` when it is set (to look at what a person sees); nothing otherwise."""
    import os

    folder = os.environ.get("SYNCTOOL_SHOTS")
    if folder:
        driver.save_screenshot(str(Path(folder) / f"{name}.png"))


def in_view(driver: Any, element: Any) -> bool:
    top, bottom, height = driver.execute_script(
        "const r = arguments[0].getBoundingClientRect(); return [r.top, r.bottom, window.innerHeight];", element
    )
    return top >= 0 and bottom <= height


def background(driver: Any, element: Any) -> str:
    return driver.execute_script("return getComputedStyle(arguments[0]).backgroundColor", element)


@pytest.mark.parametrize("phone", [True, False], ids=["phone", "desktop"])
def test_an_admin_maps_a_campaign_by_name_and_fixes_a_refused_setting_without_retyping(staff_site, chromium, phone):
    """The set-up in the browser, on a phone and a desktop: a gift of a campaign nobody mapped fell to the default
    coding; the admin maps the campaign choosing it, its CRM fund and CRM campaign by name, and reads names back;
    a refused setting is said as an error beside its field, in plain words, with what was typed kept and the page
    at that field, so the admin fixes the one wrong address; the CLI sees both, the staff actions record them."""
    import json

    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import Select

    site, _ = staff_site
    appeal = {"id": 118722, "code": "AA26", "title": "Annual Appeal", "type": "general", "status": "active"}
    site.world.givebutter.campaigns[118722] = appeal  # Givebutter names the campaign; synctool caches it
    assert site.give(1).status_code == 200
    assert drained(site) == {"succeeded": 1}
    overview = json.loads(site.run("overview", "--json").stdout)
    [unmapped] = overview["unmapped_campaigns"]
    assert (unmapped["campaign_id"], unmapped["campaign"]) == ("118722", "Annual Appeal")
    driver = chromium(phone=phone)
    sign_in_by_link(driver, printed_link(site, "admin@example.org"))
    main = driver.find_element(By.TAG_NAME, "main")
    assert "Campaigns with no mapping" in main.text and "synctool " not in main.text  # no shell command to read
    no_sideways_scroll(driver)
    shot(driver, f"overview-admin-{'phone' if phone else 'desktop'}")
    if phone:  # the overview's link: the campaign is chosen already
        go(driver, driver.find_element(By.LINK_TEXT, "Map this campaign"))
        assert Select(driver.find_element(By.ID, "override-campaign")).first_selected_option.get_attribute("value") == "118722"
    else:  # the page from the navigation: the campaign chosen from the list by its name
        go(driver, driver.find_element(By.LINK_TEXT, "Mappings"))
        campaign = Select(driver.find_element(By.ID, "override-campaign"))
        [option] = [o for o in campaign.options if o.get_attribute("value") == "118722"]
        assert option.text == "Annual Appeal (118722), general"
        campaign.select_by_visible_text("Annual Appeal (118722), general")
    assert driver.find_element(By.TAG_NAME, "h1").text == "Mappings"
    no_sideways_scroll(driver)
    Select(driver.find_element(By.ID, "override-fund")).select_by_visible_text("Language Classes #2401")
    Select(driver.find_element(By.ID, "override-crm-campaign")).select_by_visible_text("Membership Drive #824")
    go(driver, driver.find_element(By.XPATH, "//button[normalize-space()='Save campaign override']"))
    said = driver.find_element(By.CSS_SELECTOR, ".flash").text
    assert said.startswith("Campaign Annual Appeal (118722) is mapped: ")
    assert "CRM fund Language Classes (#2401), CRM campaign Membership Drive (#824)" in said and "_id" not in said
    row = driver.find_element(By.XPATH, "//section[@aria-labelledby='campaign-overrides']//tbody/tr[1]")
    assert (
        "Annual Appeal (118722)" in row.text
        and "fund Language Classes #2401" in row.text
        and "CRM campaign Membership Drive #824" in row.text
    )
    assert "fund 2401" not in row.text
    no_sideways_scroll(driver)
    shot(driver, f"mapped-{'phone' if phone else 'desktop'}")
    overrides = json.loads(site.run("mappings", "overrides", "--json").stdout)
    assert [(o["key"], o["fund_id"], o["campaign_id"]) for o in overrides] == [("118722", 2401, 824)]
    assert json.loads(site.run("overview", "--json").stdout)["unmapped_campaigns"] == []

    go(driver, driver.find_element(By.LINK_TEXT, "Settings"))
    headings = [h.text for h in driver.find_elements(By.CSS_SELECTOR, "main h2")]  # each setting titled in words
    assert "Mailing events in the CRM (mailchimp)" in headings and "Plan changes in contact reports (monthly donors)" in headings
    keys = {"mailing-sync-enabled", "pos-default-constituent", "plans-report-changes", "plans-chat-webhook"}
    assert not [h for h in headings if h.split(" (")[0] in keys]
    typed = "ops@example.org, not-an-address"
    driver.find_element(By.ID, "emails").send_keys(typed)
    go(driver, driver.find_element(By.XPATH, "//button[normalize-space()='Save alert recipients']"))
    assert driver.current_url.endswith("/admin/settings")
    error = driver.find_element(By.CSS_SELECTOR, "p.error[role=alert]")
    assert error.text == "Not done: \u201cnot-an-address\u201d is not an e-mail address." and "emails.1" not in error.text
    field = driver.find_element(By.ID, "emails")
    assert field.get_attribute("value") == typed and field.get_attribute("aria-invalid") == "true"
    assert driver.switch_to.active_element.get_attribute("id") == "emails"  # the page is back at the field
    assert in_view(driver, error) and in_view(driver, field)
    assert not driver.find_elements(By.CSS_SELECTOR, "p.flash[role=status]")  # not the green of a success
    assert background(driver, error) != "rgb(231, 245, 236)"
    no_sideways_scroll(driver)
    shot(driver, f"refused-{'phone' if phone else 'desktop'}")
    field.send_keys(Keys.END, Keys.BACKSPACE * len("not-an-address"), "treasurer@example.org")  # only the wrong one
    go(driver, driver.find_element(By.XPATH, "//button[normalize-space()='Save alert recipients']"))
    assert (
        "The failure digest goes to ops@example.org, treasurer@example.org."
        in driver.find_element(By.CSS_SELECTOR, ".flash").text
    )
    assert background(driver, driver.find_element(By.CSS_SELECTOR, ".flash")) == "rgb(231, 245, 236)"
    recipients = json.loads(site.run("settings", "alert-recipients", "--json").stdout)["emails"]
    assert recipients == ["ops@example.org", "treasurer@example.org"]
    Select(driver.find_element(By.ID, "policy")).select_by_value("auto")
    go(driver, driver.find_element(By.XPATH, "//button[normalize-space()='Save donor matching']"))
    assert "Donor matching is auto." in driver.find_element(By.CSS_SELECTOR, ".flash").text
    assert json.loads(site.run("settings", "donor-matching", "--json").stdout)["policy"] == "auto"
    done = site.rows(
        "SELECT who, action, target, outcome FROM staff_actions WHERE via = 'page' AND action != 'sign in' ORDER BY id"
    )
    assert [row[:3] for row in done] == [
        ("admin@example.org", "set campaign override", "118722"),
        ("admin@example.org", "set alert recipients", None),
        ("admin@example.org", "set alert recipients", "ops@example.org, treasurer@example.org"),
        ("admin@example.org", "set donor matching", "auto"),
    ]
    assert [row[3][:7] for row in done] == ["done", "refused", "done", "done"]


def test_a_viewer_on_a_phone_is_linked_only_to_pages_they_open_and_reads_no_shell_command(staff_site, chromium):
    """What needs attention, as a viewer reads it: a link to each page the viewer opens, none to an admin's page
    (which would answer them 403), and no shell command."""
    from selenium.webdriver.common.by import By

    site, _ = staff_site
    assert site.give(1).status_code == 200
    drained(site)
    failed_job(site)
    phone = chromium(phone=True)
    sign_in_by_link(phone, printed_link(site, "viewer@example.org"))
    needs = phone.find_element(By.XPATH, "//section[@aria-labelledby='needs']")
    assert "1 failed sync record(s) to retry or resolve" in needs.find_element(By.TAG_NAME, "a").text
    unmapped = needs.find_element(By.XPATH, ".//li[contains(., 'fell to the default coding')]")
    assert not unmapped.find_elements(By.TAG_NAME, "a") and "(an admin sees to it)" in unmapped.text
    main = phone.find_element(By.TAG_NAME, "main").text
    assert "synctool " not in main and "--fund-id" not in main
    no_sideways_scroll(phone)
    shot(phone, "overview-viewer-phone")
    links = [a.get_attribute("href") for a in phone.find_elements(By.CSS_SELECTOR, "main a[href], header nav a[href]")]
    assert links and not [h for h in links if "/admin/mappings" in h or "/admin/reconcile" in h]
    for href in sorted(set(links)):
        phone.get(href)
        assert phone.find_element(By.TAG_NAME, "h1").text != "Not for your role", href
