"""The terminal kit every command group stands on, the CLI's and the platforms' (``commands.py``). It sits low so
a platform's commands use it without importing the CLI above them; the core (ops, queue, crm, store) never
imports it. One idea a module, every name importable from ``synctool.console``:

- ``context``: the command's lazily built Runtime and database (``AppContext``, ``ctx_obj``);
- ``actions``: ``@action``, which records a command that changes something in the staff actions log;
- ``groups``: command groups that turn synctool's errors into a line and an exit code, and the root's table of
  commands, each built only when named (``Command``, ``RootGroup``, ``sub_app``); a group that lists its rows
  when named alone (``listing_group``);
- ``options``: the options several commands take (``crm_id``, ``Limit``, ...), and ``options_as``, a command's
  options as its operation's model;
- ``output``: the shared ``--json``/``--columns`` options and the one renderer (``render``, ``emit_json``,
  ``key_values``, ``blocks``, ``render_outcome``, ``exit_if_failed``);
- ``tables``: a table that fits the terminal (``table``, and ``pick_columns``, which chooses its columns).
"""

from synctool.console.actions import ArgumentSource as ArgumentSource
from synctool.console.actions import action as action
from synctool.console.context import AppContext as AppContext
from synctool.console.context import ctx_obj as ctx_obj
from synctool.console.groups import METAVARS as METAVARS
from synctool.console.groups import Command as Command
from synctool.console.groups import RootGroup as RootGroup
from synctool.console.groups import SynctoolGroup as SynctoolGroup
from synctool.console.groups import listing_group as listing_group
from synctool.console.groups import load_command as load_command
from synctool.console.groups import name_metavars as name_metavars
from synctool.console.groups import sub_app as sub_app
from synctool.console.groups import summary as summary
from synctool.console.options import Limit as Limit
from synctool.console.options import Source as Source
from synctool.console.options import crm_id as crm_id
from synctool.console.options import options_as as options_as
from synctool.console.output import AsJson as AsJson
from synctool.console.output import Columns as Columns
from synctool.console.output import blocks as blocks
from synctool.console.output import emit_json as emit_json
from synctool.console.output import exit_if_failed as exit_if_failed
from synctool.console.output import key_values as key_values
from synctool.console.output import render as render
from synctool.console.output import render_outcome as render_outcome
from synctool.console.tables import FIRST_TO_GROW as FIRST_TO_GROW
from synctool.console.tables import GAP as GAP
from synctool.console.tables import MIN_TEXT_WIDTH as MIN_TEXT_WIDTH
from synctool.console.tables import TEXT_COLUMNS as TEXT_COLUMNS
from synctool.console.tables import pick_columns as pick_columns
from synctool.console.tables import table as table
