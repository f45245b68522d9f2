"""The demo's task and the scripted model's side of it: the turn ``browy demo`` runs.

:func:`demo_task` is what the user asks (buy a kettle in the demo shop and check out as
:data:`CUSTOMER`); :func:`demo_script` is how the scripted model server answers it, one tool call
after another (its script format: :mod:`nativehost.demo.model_script`), and then the side panel's
follow-up question (:data:`PANEL_QUESTION`, whose session the script finds by
:data:`PANEL_MARKER`).

The scripted turn's element numbers are those ``inspect_page`` gives for the demo pages
(``nativehost/demo/demo_site``; the numbering is deterministic for a fixed page): change a page and
the numbers below must follow.
"""

from __future__ import annotations

from typing import Any

__all__ = ["CARD", "CUSTOMER", "PANEL_MARKER", "PANEL_QUESTION", "demo_script", "demo_task"]

PANEL_QUESTION = "Which tabs are open right now?"
PANEL_MARKER = "Which tabs are open"

CUSTOMER = {
    "name": "Ada Lovelace",
    "email": "ada@example.com",
    "address": "12 Analytical Way, London",
}


#: A test card (the payment provider's form accepts any complete one).
CARD = {"number": "4242 4242 4242 4242", "expiry": "12/30", "cvc": "123"}


def demo_task(site_url: str) -> str:
    return (
        f"Go to the Teacup & Co. shop at {site_url}/ , search for a tea kettle, open it, add it "
        f"to the cart and check out as {CUSTOMER['name']}, {CUSTOMER['email']}, shipping to "
        f"{CUSTOMER['address']}, paying with the test card {CARD['number']} (expiry "
        f"{CARD['expiry']}, CVC {CARD['cvc']}). Place the order and tell me what the "
        "confirmation says."
    )


def _call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def demo_script(site_url: str) -> dict[str, Any]:
    """The scripted model's side of the demo (the model_server script format)."""
    steps: list[dict[str, Any]] = [
        {
            "text": "I'll open the shop first.",
            "tool_calls": [_call("navigate", url=f"{site_url}/")],
        },
        {"tool_calls": [_call("inspect_page")]},
        # [3] textbox "Search products", [4] button "Search"
        {
            "text": "Searching for a kettle.",
            "tool_calls": [_call("type_index", index=3, text="kettle", submit=True)],
        },
        {"tool_calls": [_call("inspect_page")]},
        # [3] link "Copper Tea Kettle" (the only result)
        {"text": "Found the Copper Tea Kettle.", "tool_calls": [_call("click_index", index=3)]},
        {"tool_calls": [_call("inspect_page")]},
        # [3] button "Add to cart"
        {
            "text": "It's $34.00; adding it to the cart.",
            "tool_calls": [_call("click_index", index=3)],
        },
        {"tool_calls": [_call("inspect_page")]},
        # [3] link "Copper Tea Kettle" (the cart's item), [4] link "Proceed to checkout"
        {"tool_calls": [_call("click_index", index=4)]},
        {"tool_calls": [_call("inspect_page")]},
        # [3] "Full name", [4] "Email", [5] "Shipping address", [6] button "Place order";
        # the card form is a frame of another site (the payment provider):
        # -- frame 1: localhost:<port>/pay.html (another site) --
        # [100001] textbox "Card number" secret, [100002] "Expiry (MM/YY)", [100003] "CVC" secret
        {
            "text": "Filling in the checkout form, and the card in the payment provider's frame.",
            "tool_calls": [
                _call("type_index", index=3, text=CUSTOMER["name"]),
                _call("type_index", index=4, text=CUSTOMER["email"]),
                _call("type_index", index=5, text=CUSTOMER["address"]),
                _call("type_index", index=100001, text=CARD["number"]),
                _call("type_index", index=100002, text=CARD["expiry"]),
                _call("type_index", index=100003, text=CARD["cvc"]),
            ],
        },
        {"tool_calls": [_call("click_index", index=6)]},
        {"tool_calls": [_call("extract_text")]},
        {
            "text": (
                "Done: I bought the Copper Tea Kettle ($34.00) for Ada Lovelace. The shop says: "
                '"Order confirmed: 1 item(s) for Ada Lovelace, shipping to 12 Analytical Way, '
                'London, paid with the card ending 4242. A receipt goes to ada@example.com."'
            )
        },
        # The side panel's follow-up question (its own session, found by the marker).
        {"session": PANEL_MARKER, "tool_calls": [_call("list_tabs")]},
        {
            "session": PANEL_MARKER,
            "text": (
                "Two tabs: the shop's **order confirmation** page and this side panel. The order "
                "for the Copper Tea Kettle went through."
            ),
        },
    ]
    return {"mode": "script", "api_key": "sk-demo", "models": ["browy-demo"], "steps": steps}
