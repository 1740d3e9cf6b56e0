"""Getting patches upstream, by a person: draft-outreach briefs and upstream-status.

``policy`` reads an upstream's rules, ``facts`` reads a patch and the stack's
records, ``brief`` puts them together at the pin, ``render`` and the templates
in ``patchctl/templates`` write Markdown, ``output`` writes a brief directory
with its manifest, ``port`` moves patches onto a newer upstream, ``status``
and ``github`` report where each patch stands. Nothing here posts anywhere.
"""
