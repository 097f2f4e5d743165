"""The fake Little Green Light (what it speaks: ``synctool/crm/fake.py``, the name callers import it by).

- ``reference.py``: what the account holds before anyone writes, and the words its API takes;
- ``state.py``: ``FakeCrm``, the account in memory, with ``invitations.py`` (its events and invitations);
- ``gate.py``: what every request meets first (recording, rate limit, authentication, faults);
- ``answers.py``: what every endpoint says the same way (bodies, the list envelope, errors);
- ``constituents.py``, ``gifts.py``, ``memberships.py`` (group memberships among them), ``contact_reports.py``,
  ``events.py``, ``lists.py`` (reference lists, ``/types/{type}``, ``/team_members``): the endpoints, one small
  function per operation; ``control.py``: the fake's own ``/_fake/`` routes;
- ``app.py``: the routes table and ``create_app``.
"""
