"""`synctool platforms` and `synctool demo`: what synctool knows, and seeing it work."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import typer

from synctool.console import AsJson, blocks, ctx_obj, render

if TYPE_CHECKING:
    from synctool.runtime import Runtime


def platforms(ctx: typer.Context, as_json: AsJson = False) -> None:
    """List the platforms synctool knows and how to turn one on.

    Its own and those an installed package added. For each: its role (its source name in the sync log), whether it is in use (`platforms:` in config;
    `synctool init --platforms`) and, for one in use, whether its credentials are set (the secrets not set are
    named); its webhook route, commands and settings, what it can do (poll, heal, reconcile, payouts, backfill,
    webhook registration, connection test), its job targets, and the platform that runs its jobs when another
    does. A platform package installed beside synctool is in use only once `platforms:` names it: one that is
    not says how to turn it on.

    Example: synctool platforms
    """
    rows = describe(ctx_obj(ctx).rt)

    def heading(row: dict) -> str:
        return f"{row['name']} ({row['role']}): " + ("in use" if row["in_use"] else "not in use")

    fields = ["credentials", "webhook", "commands", "settings", "can", "targets", "jobs_run_by", "turn_on"]
    render(rows, as_json, people=lambda rows: blocks(rows, heading, fields))


def describe(rt: Runtime) -> list[dict[str, Any]]:
    """One row per registered platform: its name and role, whether it is in use and, if so, whether its
    credentials are set (never their values), its webhook route, commands and settings, what it can do, the
    platform that runs its jobs when another does, and, when it is not in use, how to turn it on."""
    from synctool.platforms import in_use, registered, runs_jobs_of, turn_on

    rows = []
    used = in_use(rt.config)
    for p in registered():
        unset = [name for name in p.secrets if not rt.secrets.source(name)]
        if p not in used:
            credentials = None
        else:
            credentials = "set" if not unset else "missing: " + ", ".join(unset)
        can = {
            "poll": p.poll is not None,
            "heal": p.missed is not None,
            "reconcile": p.expected is not None,
            "payouts": p.payouts is not None,
            "backfill": p.backfill,
            "webhook registration": p.registration is not None,
            "connection test": bool(p.client and p.client.probe),
        }
        rows.append(
            {
                "name": p.name,
                "role": p.role,
                "in_use": p in used,
                "credentials": credentials,
                # a platform that claims a share of another's endpoint (Platform.claims) says which
                "webhook": f"/webhooks/{p.webhook.role}"
                if p.webhook
                else ", ".join(f"/webhooks/{role} (a share of its deliveries)" for role in p.claims) or None,
                "commands": ", ".join(p.commands) or None,
                "settings": ", ".join(setting.name for setting in p.settings) or None,
                "can": ", ".join(k for k, v in can.items() if v) or None,
                "targets": ", ".join(t.name for t in p.targets) or None,
                "jobs_run_by": by.name if (by := runs_jobs_of(p.role)) is not None else None,
                "secrets": ", ".join(p.secrets) or None,
                "turn_on": None if p in used else turn_on(rt.config, p),
            }
        )
    return rows


def demo(as_json: AsJson = False) -> None:
    """Run the whole path against local fakes. Receiver, signed deliveries, poll, drain, and what the CRM holds.

    Needs no configuration and touches nothing outside this machine (loopback only, a temporary database).

    Example: synctool demo
    """
    from synctool.fakes.demo import run

    def for_people(report: dict) -> None:
        render(report["sync_log"], columns=["source", "what", "status", "outcome", "crm_gift_id"], title="sync log")
        render(report["crm_constituents"], columns=["id", "name", "tags"], title="CRM constituents (fake)")
        gift_columns = ["id", "external_id", "amount", "deductible", "date", "fund", "paid_by", "donor"]
        render(report["crm_gifts"], columns=gift_columns, title="CRM gifts (fake)")
        refund_columns = ["source", "refund_id", "gift_external_id", "amount", "amount_before", "amount_after", "state", "policy"]
        render(report["refunds"], columns=refund_columns, title="refunds (`synctool refunds list`)")
        stats = report["crm_requests"]
        typer.echo("\nThe daily summary e-mail (`synctool alerts summary --dry-run`):\n")
        typer.echo(report["summary_mail"])
        typer.echo(f"CRM requests: {stats['requests']}, 429s: {stats['rejected_429']}; demo took {report['seconds']} s")

    render(run(say=(lambda line: None) if as_json else typer.echo), as_json, people=for_people)
