"""The staff page's pages: one module a page, holding its view and its actions.

A view (``overview.overview``, ``syncs.syncs`` ...) takes the ``StaffRequest`` and reads through the operation its
CLI command and admin API route call; it returns a ``ViewResult``: what its template (the view's own name:
``syncs`` -> ``templates/syncs.html``) shows, typed per page, and the page's status. An action (a form's POST)
changes something through the same operation and returns an ``ActionResult``: the message for the next page and
what it acted on. Which path shows which view, for which role, and which action a form posts to, is
``staff_page.PAGES`` and ``staff_page.ACTIONS``; ``forms`` reads a form's fields and words what it refuses.
"""
