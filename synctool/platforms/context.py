"""Where the running job and the drain's runner used to be defined; kept so a platform package written against it
(``from synctool.platforms.context import Job``) still imports. The job is ``synctool.platforms.job.Job``, the runner
``synctool.platforms.runner``."""

from synctool.platforms.job import Job
from synctool.platforms.runner import Runner, runner

__all__ = ["Job", "Runner", "runner"]
