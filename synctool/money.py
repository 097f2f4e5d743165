"""Money is Decimal, never float: platform cents become dollars exactly."""

from __future__ import annotations

from decimal import Decimal, InvalidOperation

CENT = Decimal("0.01")


def cents_to_dollars(cents: int) -> Decimal:
    return (Decimal(int(cents)) / 100).quantize(CENT)


def dollars(value: object) -> Decimal:
    """A platform's dollar amount (number or string) as an exact Decimal with two places."""
    if isinstance(value, float):
        value = repr(value)  # 10.1 -> "10.1", not the binary expansion
    try:
        found = Decimal(str(value)).quantize(CENT)
    except (InvalidOperation, ValueError):
        raise ValueError(f"not an amount: {value!r}") from None
    if not found.is_finite():  # "NaN" quantizes to NaN, which no comparison takes
        raise ValueError(f"not an amount: {value!r}")
    return found
