"""Every JSON schema id patchctl writes, defined once (docs/FORMATS.md, "JSON documents").

One id per thing: a command's ``--json`` output and a state file never share
one. Bump the number when a field changes meaning or goes away. (``fingerprint
--json`` has none: it is exactly the object native/ embeds as its identity.)
"""

from __future__ import annotations

# command output (--json) and records
VERIFY = "patchctl.verify/1"
REBASE = "patchctl.rebase/1"
IMPORT = "patchctl.import/1"
EDIT = "patchctl.edit/1"
EDIT_CLOSE = "patchctl.edit-close/1"  # `edit --close --json`
REFRESH = "patchctl.refresh/1"
REFRESH_ALL = "patchctl.refresh-all/1"  # `refresh --all --json`
EXPORT = "patchctl.export/1"
APPLY = "patchctl.apply/1"
SERIES = "patchctl.series/1"
REPRODUCE = "patchctl.reproduce/1"
EVIDENCE = "patchctl.evidence/2"
DELETE = "patchctl.delete/1"
RENAME = "patchctl.rename/1"
RENUMBER = "patchctl.renumber/1"
MOVE = "patchctl.move/1"
FOLD = "patchctl.fold/1"
SPLIT = "patchctl.split/1"
HEADER = "patchctl.header/1"
DIFF = "patchctl.diff/1"

CI_GITHUB = "patchctl.ci-github/1"
CI_LANE = "patchctl.ci-lane/1"  # `ci run --json`, and the same document as the lane's result.json
CI_PLAN = "patchctl.ci-plan/1"  # `ci run --list --json`: the steps a lane would run
CANARY = "patchctl.canary/1"
RELEASE_BUILD = "patchctl.release-build/1"
RELEASE_VERIFY = "patchctl.release-verify/1"
OUTREACH = "patchctl.outreach/1"
OUTREACH_OUT = "patchctl.outreach-out/1"  # `draft-outreach --out DIR --json`: files written
OUTREACH_CHECK = "patchctl.outreach-check/1"  # `draft-outreach --check --out DIR --json`
UPSTREAM_STATUS = "patchctl.upstream-status/1"
BURDEN = "patchctl.burden/1"

# files patchctl writes for others to read
RELEASE = "patchctl.release/1"  # a worker package's manifest.json
RECIPE = "worker.recipe/1"  # a worker package's recipe.json (the worker's own format)
OUTREACH_MANIFEST = "patchctl.outreach-manifest/1"  # MANIFEST.json beside the briefs

# private state files under <project>/.patchctl/
REBASE_STATE = "patchctl.rebase-state/2"
EDIT_STATE = "patchctl.edit-state/1"
STACK_JOURNAL = "patchctl.stack-journal/1"  # .stack.patchctl-journal, only while a swap is made
GITHUB_CACHE = "patchctl.github-cache/1"

# older ids that readers still accept; never written
OLDER_EVIDENCE = ("patchctl.evidence/1",)
OLDER_REBASE_STATE = ("patchctl.rebase-state/1",)


def family(schema: str) -> str:
    """The id without its number (``patchctl.rebase/``): any version of that document."""
    return schema.rpartition("/")[0] + "/"
