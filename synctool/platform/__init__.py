"""Every name a platform package needs, and nothing else: ``from synctool.platform import Platform, Hook, ...``.

A platform package (synctool's own five, or one installed beside it: ``docs/platforms.md``) imports from this
module and its own package only, and from ``synctool.platform.edges`` in its ``commands.py`` and ``fake.py`` (the
Typer and Starlette helpers, kept apart so the core imports neither). A test walks the built-in packages and holds
them to it (``tests/test_platform_module.py``).

What declaring a platform needs is imported with this module; every other name the first time it is asked for
(PEP 562), so declaring a platform (its ``__init__.py``) loads none of the CRM, the queue or the store: the
``TYPE_CHECKING`` block is the one table of those names, read by type checkers as written and by ``__getattr__``
at run time.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path
from typing import TYPE_CHECKING

# declaring a platform: its parts and its hooks named by reference (loaded with the registry, before any command)
from synctool.config_sections import Section
from synctool.platforms.contract import (
    ApiRoute,
    Client,
    Fake,
    Mappings,
    Platform,
    PlatformClient,
    PlatformSection,
    Setting,
    Target,
    Webhook,
    handlers_in,
    setting_in,
)
from synctool.platforms.hooks import Hook, Loaded, Served

if TYPE_CHECKING:  # the rest, each imported when first asked for (the table ``exports`` reads)
    from synctool import mappings, notices, settings, store
    from synctool.config import Config
    from synctool.crm import (
        constituents,
        contact_reports,
        gifts,
        group_memberships,
        invitations,
        mirror,
        references,
        refunds,
        soft_credits,
    )
    from synctool.crm import currency as currency_rule
    from synctool.crm import environment as crm_environment
    from synctool.crm.constituents import Person
    from synctool.crm.gifts import gift_date
    from synctool.crm.references import coding as reference_coding
    from synctool.crm.references import require as require_reference
    from synctool.errors import (
        ConfigError,
        Conflict,
        InvalidInput,
        InvalidSignature,
        NeedsReview,
        NotFound,
        PermanentError,
        RemoteError,
        Skip,
        StoreUnavailable,
        SyncError,
        SynctoolError,
        TransientError,
        Wait,
        one_of,
    )
    from synctool.http import ApiClient
    from synctool.mappings import ack_choice
    from synctool.money import cents_to_dollars, dollars
    from synctool.platforms import mailing_list, plans, tickets, watermark
    from synctool.platforms.address import PostalAddress
    from synctool.platforms.api_options import ApiOptions
    from synctool.platforms.job import Job
    from synctool.platforms.payment_events import Charge, CustomerDetails, PaymentEvent, PortalObject
    from synctool.platforms.plans import PlanCharge, PlanEvent, PlanRecord
    from synctool.platforms.reconcile import Expected, Payout, PayoutLine
    from synctool.platforms.registration import Check, Found, RegisterResult, Wanted, compare, needs_repair, ours
    from synctool.platforms.registry import using
    from synctool.platforms.runner import runner
    from synctool.platforms.signing import sign, verify_signed_delivery
    from synctool.platforms.webhook import Event, JobSpec, JsonObject, Missed, WebhookSecrets, parse_json_object, text
    from synctool.queue import jobs, log, unit
    from synctool.queue.jobs import Outcome
    from synctool.queue.unit import Unit
    from synctool.queue.worker import run_now
    from synctool.runtime import Runtime
    from synctool.store import Connection, Row
    from synctool.timeutil import age_s, parse_iso, parse_moment
    from synctool.validation import (
        Body,
        CrmId,
        Email,
        ForceQuery,
        Lenient,
        Moment,
        Payload,
        Query,
        Text,
        parse,
        payload,
        strict_fields,
    )

__all__ = [
    "ApiClient",
    "ApiOptions",
    "ApiRoute",
    "Body",
    "Charge",
    "Check",
    "Client",
    "Config",
    "ConfigError",
    "Conflict",
    "Connection",
    "CrmId",
    "CustomerDetails",
    "Email",
    "Event",
    "Expected",
    "Fake",
    "ForceQuery",
    "Found",
    "Hook",
    "InvalidInput",
    "InvalidSignature",
    "Job",
    "JobSpec",
    "JsonObject",
    "Lenient",
    "Loaded",
    "Mappings",
    "Missed",
    "Moment",
    "NeedsReview",
    "NotFound",
    "Outcome",
    "Payload",
    "PaymentEvent",
    "Payout",
    "PayoutLine",
    "PermanentError",
    "Person",
    "PlanCharge",
    "PlanEvent",
    "PlanRecord",
    "Platform",
    "PlatformClient",
    "PlatformSection",
    "PortalObject",
    "PostalAddress",
    "Query",
    "RegisterResult",
    "RemoteError",
    "Row",
    "Runtime",
    "Section",
    "Served",
    "Setting",
    "Skip",
    "StoreUnavailable",
    "SyncError",
    "SynctoolError",
    "Target",
    "Text",
    "Unit",
    "TransientError",
    "Wait",
    "Wanted",
    "Webhook",
    "WebhookSecrets",
    "ack_choice",
    "age_s",
    "cents_to_dollars",
    "compare",
    "constituents",
    "contact_reports",
    "crm_environment",
    "currency_rule",
    "dollars",
    "gift_date",
    "gifts",
    "group_memberships",
    "handlers_in",
    "invitations",
    "jobs",
    "log",
    "mailing_list",
    "mappings",
    "mirror",
    "needs_repair",
    "notices",
    "one_of",
    "ours",
    "parse",
    "parse_iso",
    "parse_json_object",
    "parse_moment",
    "payload",
    "plans",
    "reference_coding",
    "references",
    "refunds",
    "require_reference",
    "run_now",
    "runner",
    "setting_in",
    "settings",
    "sign",
    "soft_credits",
    "store",
    "strict_fields",
    "text",
    "tickets",
    "unit",
    "using",
    "verify_signed_delivery",
    "watermark",
]


@functools.cache
def exports(path: str = __file__) -> dict[str, str]:
    """Each name the ``TYPE_CHECKING`` block of ``path`` imports -> its reference, ``"module:name"`` (a name in
    the module, or its submodule), as ``synctool.lazy.load`` reads it."""
    tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    block = next(n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING")
    return {
        alias.asname or alias.name: f"{node.module}:{alias.name}"
        for node in block.body
        if isinstance(node, ast.ImportFrom) and node.module
        for alias in node.names
    }


def __getattr__(name: str) -> object:
    ref = exports().get(name)
    if ref is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from synctool.lazy import load

    value = load(ref)
    globals()[name] = value
    return value
