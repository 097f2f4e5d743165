"""Stripe, the member portal's payment processor: its checkout events confirm portal payments (the
portal's rules act on them)."""

from __future__ import annotations

from synctool.platforms import Webhook

WEBHOOK = Webhook("payments", "synctool.platforms.stripe.webhook")
SECRETS = {"PAYMENTS_WEBHOOK_SECRET": "Stripe's endpoint signing secret (whsec_...)"}
