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
REFRESH = "patchctl.refresh/1"
EXPORT = "patchctl.export/1"
APPLY = "patchctl.apply/1"
SERIES = "patchctl.series/1"
REPRODUCE = "patchctl.reproduce/1"
EVIDENCE = "patchctl.evidence/2"
DELETE = "patchctl.delete/1"
RENAME = "patchctl.rename/1"
MOVE = "patchctl.move/1"
FOLD = "patchctl.fold/1"
SPLIT = "patchctl.split/1"
HEADER = "patchctl.header/1"
DIFF = "patchctl.diff/1"

# private state files under <project>/.patchctl/
REBASE_STATE = "patchctl.rebase-state/2"
EDIT_STATE = "patchctl.edit-state/1"
